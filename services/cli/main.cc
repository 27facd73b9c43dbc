// gradsync: submit and watch jobs, or run a whole local cluster for one job.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"

namespace {

constexpr char kUsage[] =
    "usage: gradsync COMMAND [ARGS]\n"
    "\n"
    "  run FILE [--workers N] [--device D] [--set path=value ...] [-o json]\n"
    "                     start a local cluster, run the job to the end, print a summary\n"
    "  local up --workers N --state-dir DIR [--coordinator-port P] [--device D]\n"
    "  local down --state-dir DIR\n"
    "                     a local cluster in the background (endpoints in DIR/endpoints.json);\n"
    "                     --device auto (default: worker i on GPU i mod GPUs, or the CPU), cpu,\n"
    "                     cuda or cuda:N; worker i runs on its share of the CPUs unless\n"
    "                     --no-cpu-binding (run and local up)\n"
    "                     (both write fresh tokens to DIR/tokens, readable by you alone)\n"
    "  submit FILE [--set path=value ...] [--wait] [-o json]\n"
    "  get JOB [-o json]    list [-o json]    cancel JOB    watch JOB\n"
    "                     against --state-dir DIR (env GRADSYNC_STATE_DIR; a local cluster: its\n"
    "                     address and tokens), or\n"
    "                     --address ADDRESS (env GRADSYNC_ADDRESS, default localhost:7070):\n"
    "                     HOST:PORT for gRPC, http://HOST:PORT or https://HOST:PORT for REST;\n"
    "                     --token-file FILE (env GRADSYNC_TOKEN_FILE) holds the bearer token;\n"
    "                     --token T (env GRADSYNC_TOKEN) works too, but prefer the file: a token\n"
    "                     on the command line is in your shell history, and in ps until scrubbed;\n"
    "                     --tls-ca FILE (env GRADSYNC_TLS_CA_FILE) verifies a TLS server;\n"
    "                     --tls-server-name NAME (env GRADSYNC_TLS_SERVER_NAME) verifies it against\n"
    "                     NAME, not the address's host (a port-forward to 127.0.0.1 of a server whose\n"
    "                     certificate names its Service); TLS only\n"
    "  artifacts list JOB [PREFIX] [--sha256] [-o table|json]\n"
    "  artifacts get JOB [PATH] [-o DIR]\n"
    "                     a job's files (weights, checkpoints, exports) through the coordinator, with\n"
    "                     the connection options above; get writes PATH, or every file, under DIR\n"
    "                     (default .), each checked against the coordinator's SHA-256\n"
    "  report JOB -o FILE.svg [--metrics-api HOST:PORT] [--metrics-token-file FILE] [--state-dir DIR]\n"
    "                     loss and throughput curves from the metrics service (env GRADSYNC_METRICS_API,\n"
    "                     GRADSYNC_METRICS_TOKEN_FILE)\n"
    "  healthcheck HOST:PORT [--service NAME] [--tls-ca FILE] [--tls-server-name NAME]\n"
    "                     exit 0 when the server answers grpc.health.v1 SERVING\n"
    "  model describe PRESET [--set transformer.layers=6 ...] [-o json]\n"
    "                     a transformer preset's dimensions, parameters and FLOPs per token\n"
    "                     (--set paths are relative to the model spec)\n"
    "  model logits WEIGHTS --tokens ID,... [--preset P --set path=value ...]\n"
    "                     the logits of fixed tokens, as JSON (comparisons with other frameworks)\n"
    "  checkpoint inspect PATH | diff A B | list (--root DIR | JOB) [-o json]\n"
    "                     a checkpoint's manifest, parts and tensors; per-tensor differences;\n"
    "                     committed checkpoints (verified when their files are on this machine)\n"
    "  data prepare TEXT... -o DIR [--tokenizer TOK] [--val-fraction F] [--shard-tokens N]\n"
    "                     tokenise text files (bytes, or TOK: a tokenizer.json, GPT-2's encoder.json\n"
    "                     + vocab.bpe, a SentencePiece .model) into llm.c shards (train_*.bin, val_*.bin)\n"
    "  generate --weights PATH --prompt TEXT [--tokenizer TOK] [--tokens N] [--temperature T]\n"
    "           [--top-k K] [--seed S]\n"
    "                     continue TEXT with tokens sampled from a trained transformer (PATH: a\n"
    "                     weights file, a committed checkpoint directory or an export)\n"
    "  export SRC --format hf|gradsync|llmc -o OUT\n"
    "                     weights or a committed checkpoint as safetensors (Hugging Face's or\n"
    "                     gradsync's names, with config.json) or as llm.c's GPT-2 checkpoint\n"
    "  version [-o json]    (or --version) the version, git commit and CUDA build\n"
    "\n"
    "Job specs are YAML or JSON with the JSON names of gradsync.v1.JobSpec, e.g. training.worldSize.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string command = argv[1];
  const std::vector<std::string> rest(argv + 2, argv + argc);
  using namespace gradsync::cli;
  ScrubSecretArguments(argc, argv);
  if (command == "run") return RunCommand(rest);
  if (command == "local") return LocalCommand(rest);
  if (command == "submit") return SubmitCommand(rest);
  if (command == "get") return GetCommand(rest);
  if (command == "list") return ListCommand(rest);
  if (command == "cancel") return CancelCommand(rest);
  if (command == "watch") return WatchCommand(rest);
  if (command == "healthcheck") return HealthCommand(rest);
  if (command == "report") return ReportCommand(rest);
  if (command == "artifacts") return ArtifactsCommand(rest);
  if (command == "model") return ModelCommand(rest);
  if (command == "checkpoint") return CheckpointCommand(rest);
  if (command == "data") return DataCommand(rest);
  if (command == "generate") return GenerateCommand(rest);
  if (command == "export") return ExportCommand(rest);
  if (command == "version" || command == "--version") return VersionCommand(rest);
  std::fprintf(stderr, "gradsync: unknown command \"%s\"\n\n%s", command.c_str(), kUsage);
  return 2;
}
