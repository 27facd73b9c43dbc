#include "command_table.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "commands.h"

namespace gradsync::cli {
namespace {

using F = OutputFormat;

const std::vector<OptionDoc>& ConnectionOptions() {
  static const auto* options = new std::vector<OptionDoc>{{"address", "ADDRESS"},      {"token", "T"},
                                                          {"token-file", "FILE"},      {"tls-ca", "FILE"},
                                                          {"tls-server-name", "NAME"}, {"state-dir", "DIR"}};
  return *options;
}

const std::vector<OptionDoc>& MetricsApiOptions() {
  static const auto* options =
      new std::vector<OptionDoc>{{"metrics-api", "HOST:PORT"}, {"metrics-token-file", "FILE"}, {"state-dir", "DIR"}};
  return *options;
}

// `options`, then those of `more` it lacks.
std::vector<OptionDoc> Plus(std::vector<OptionDoc> options, const std::vector<OptionDoc>& more) {
  for (const OptionDoc& o : more) {
    const bool present =
        std::any_of(options.begin(), options.end(), [&](const OptionDoc& have) { return have.name == o.name; });
    if (!present) options.push_back(o);
  }
  return options;
}

OptionDoc Output(std::string value = "FORMAT") { return {"output", std::move(value), 'o'}; }

constexpr char kReachingACluster[] =
    "Reaching a cluster: --state-dir DIR (env GRADSYNC_STATE_DIR): a local cluster, its address and\n"
    "tokens from DIR/endpoints.json; or --address ADDRESS (env GRADSYNC_ADDRESS, default localhost:7070):\n"
    "HOST:PORT for gRPC, http://HOST:PORT or https://HOST:PORT for REST. --token-file FILE (env\n"
    "GRADSYNC_TOKEN_FILE) holds the bearer token; --token T (env GRADSYNC_TOKEN) works too, but prefer\n"
    "the file: a token on the command line is in your shell history, and in ps until scrubbed.\n"
    "--tls-ca FILE (env GRADSYNC_TLS_CA_FILE) verifies a TLS server; --tls-server-name NAME (env\n"
    "GRADSYNC_TLS_SERVER_NAME) verifies it against NAME, not the address's host (a port-forward to\n"
    "127.0.0.1 of a server whose certificate names its Service); TLS only. Naming none of these, a\n"
    "command reaches the current cluster: the one the last `gradsync local up` started, while it runs.\n";

constexpr char kDevices[] =
    "--device auto (default: worker i on GPU i mod GPUs, or the CPU), cpu, cuda or cuda:N; worker i\n"
    "runs on its share of the CPUs unless --no-cpu-binding.\n";

std::vector<Command> MakeTable() {
  std::vector<Command> t;
  t.push_back({.name = "run",
               .synopsis = "FILE [--workers N] [--device D] [--no-cpu-binding] [--set path=value ...] "
                           "[--state-dir DIR]",
               .summary = "start a local cluster, run the job to the end, print a summary",
               .example = "gradsync run examples/jobs/mlp.yaml --workers 2 --set training.maxSteps=100",
               .details = absl::StrCat(
                   "FILE is a job spec, YAML or JSON. --workers N workers (default: the spec's\n"
                   "training.worldSize).\n",
                   kDevices,
                   "--state-dir DIR keeps the cluster's logs, tokens and artifacts (default: a new directory\n"
                   "under $TMPDIR). Relative data paths start in the current directory. Ctrl-C cancels the\n"
                   "job: its ranks save the weights at the next step boundary, then the cluster stops.\n"),
               .options = {{"workers", "N"},
                           {"set", "path=value"},
                           Output(),
                           {"state-dir", "DIR"},
                           {"device", "D"},
                           {"no-cpu-binding", ""}},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = RunCommand});
  t.push_back({.name = "local up",
               .synopsis = "--workers N --state-dir DIR [--coordinator-port P] [--rest-port P] [--metrics-port P]\n"
                           "    [--device D] [--no-cpu-binding] [--data-root DIR ...]",
               .summary = "start a local cluster in the background and make it the current cluster",
               .example = "gradsync local up --workers 2 --state-dir /tmp/gradsync-local",
               .details = absl::StrCat(
                   "Prints the cluster file DIR/endpoints.json once every service is up; writes fresh tokens to\n"
                   "DIR/tokens, readable by you alone.\n",
                   kDevices,
                   "The coordinator reads data inside each --data-root DIR (default: the directory it started\n"
                   "in). Commands given no --address, --state-dir, GRADSYNC_ADDRESS or GRADSYNC_STATE_DIR\n"
                   "reach this cluster until `gradsync local down`; relative data paths of the specs they\n"
                   "submit start in the directory the command runs in.\n"),
               .options = {{"workers", "N"},
                           {"state-dir", "DIR"},
                           {"coordinator-port", "P"},
                           {"rest-port", "P"},
                           {"metrics-port", "P"},
                           {"device", "D"},
                           {"no-cpu-binding", ""},
                           {"data-root", "DIR"}},
               .run = LocalCommand});
  t.push_back({.name = "local down",
               .synopsis = "[--state-dir DIR]",
               .summary = "stop a local cluster (default: the current one) and forget it",
               .example = "gradsync local down",
               .options = {{"state-dir", "DIR"}},
               .run = LocalCommand});
  const std::vector<OptionDoc> job_options = Plus(ConnectionOptions(), MetricsApiOptions());
  t.push_back({.name = "submit",
               .synopsis = "FILE [--set path=value ...] [--wait]",
               .summary = "submit a job; with --wait, follow it to its end as run does",
               .example = "gradsync submit examples/jobs/mlp.yaml --set training.maxSteps=200 --wait",
               .details = "Prints the job's name (jobs/<id>), or with --wait its progress and summary (exit 0 only\n"
                          "when it SUCCEEDED). Relative data paths of a spec submitted to a local cluster start in\n"
                          "the current directory.\n",
               .options = Plus({{"set", "path=value"}, {"wait", ""}, Output()}, job_options),
               .formats = {F::kTable, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .operands = Operands::kFiles,
               .run = SubmitCommand});
  t.push_back({.name = "get",
               .synopsis = "JOB",
               .summary = "a job described: spec highlights, times, restarts, progress, checkpoints, events",
               .example = "gradsync get jobs/mlp-1a2b3",
               .details = "JOB is jobs/<id> or the bare id. -o wide prints the job as one row of gradsync list -o\n"
                          "wide; -o json and -o yaml the whole job as the API returns it.\n",
               .options = Plus({Output()}, job_options),
               .formats = {F::kTable, F::kWide, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .run = GetCommand});
  t.push_back({.name = "list",
               .synopsis = "[--page-size N]",
               .summary = "every job, in the order they were submitted",
               .example = "gradsync list -o wide",
               .details = "-o json prints {\"items\": [...]}, each item a job as get -o json prints it.\n",
               .options = Plus({{"page-size", "N"}, Output()}, job_options),
               .formats = {F::kTable, F::kWide, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .run = ListCommand});
  t.push_back({.name = "cancel",
               .synopsis = "JOB",
               .summary = "cancel a job; a running one stops at its next step boundary and saves its weights",
               .example = "gradsync cancel jobs/mlp-1a2b3",
               .options = Plus({Output()}, job_options),
               .formats = {F::kTable, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .run = CancelCommand});
  t.push_back({.name = "watch",
               .synopsis = "JOB",
               .summary = "follow a job's progress and loss curve to its end, then print its summary",
               .example = "gradsync watch jobs/mlp-1a2b3",
               .details = "Exit 0 when the job SUCCEEDED, 1 when it failed or was cancelled. With the metrics API\n"
                          "(--metrics-api, or a local cluster's) the final curve has every step.\n",
               .options = Plus({Output()}, job_options),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = WatchCommand});
  t.push_back({.name = "logs",
               .synopsis = "JOB [--rank R] [--follow]",
               .summary = "a job's own log lines, from every rank (or rank R), in time order",
               .example = "gradsync logs jobs/mlp-1a2b3 --rank 0 --follow",
               .details = "Lines read \"I 2026-11-28T15:04:05.123Z r1 g2 source] message\": level, UTC time, rank,\n"
                          "generation. They come through the coordinator, which keeps the newest lines of each\n"
                          "job in memory (a worker ships at most 50 a second); with -f/--follow new lines follow\n"
                          "until the job ends. Once a local cluster is gone, --state-dir DIR reads its workers'\n"
                          "files (DIR/logs/jobs/<id>/rank-<r>.log) instead.\n",
               .options = Plus({{"rank", "R"}, {"follow", "", 'f'}}, ConnectionOptions()),
               .connects = true,
               .run = LogsCommand});
  t.push_back({.name = "workers",
               .synopsis = "",
               .summary = "the worker pool: each worker's host, device and state (idle, busy with a rank, lost)",
               .example = "gradsync workers -o wide",
               .details = "Lists the registered workers, then those lost (no heartbeat for the lease timeout) within\n"
                          "the last hour. HEARTBEAT is how long ago the coordinator last heard from each. -o wide\n"
                          "adds the pid, the generation and when the worker registered.\n",
               .options = Plus({Output()}, ConnectionOptions()),
               .formats = {F::kTable, F::kWide, F::kJson, F::kYaml},
               .connects = true,
               .run = WorkersCommand});
  t.push_back({.name = "artifacts list",
               .synopsis = "JOB [PREFIX] [--sha256]",
               .summary = "a job's files on the coordinator (weights, checkpoints, exports), with sizes",
               .example = "gradsync artifacts list jobs/mlp-1a2b3 --sha256",
               .details = "Paths start with PREFIX when given; with --sha256 each file's digest (the coordinator\n"
                          "reads them). -o json is the API's ListArtifactsResponse.\n",
               .options = Plus({Output(), {"sha256", ""}}, ConnectionOptions()),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = ArtifactsCommand});
  t.push_back({.name = "artifacts get",
               .synopsis = "JOB [PATH] [-o DIR]",
               .summary = "download a job's file PATH, or every file, into DIR (default .)",
               .example = "gradsync artifacts get jobs/mlp-1a2b3 weights.bin -o out",
               .details = "Each file is checked against the coordinator's SHA-256 before it is renamed into place,\n"
                          "and printed as sha256sum prints it (so sha256sum -c checks it again).\n",
               .options = Plus({Output("DIR")}, ConnectionOptions()),
               .connects = true,
               .run = ArtifactsCommand});
  t.push_back({.name = "report",
               .synopsis = "JOB -o FILE.svg|FILE.csv|FILE.jsonl [--metrics-api HOST:PORT] [--metrics-token-file FILE]\n"
                           "    [--state-dir DIR] [--artifact-root DIR]",
               .summary = "a job's loss and throughput curves (.svg) or its series as data (.csv, .jsonl)",
               .example = "gradsync report jobs/mlp-1a2b3 -o curves.svg",
               .details =
                   "The format is the file's extension. The series comes from the metrics API: --metrics-api\n"
                   "(env GRADSYNC_METRICS_API) with its token in --metrics-token-file (env\n"
                   "GRADSYNC_METRICS_TOKEN_FILE), --state-dir's, or the current cluster's; when none answers or\n"
                   "it does not know the job, from the series file kept beside the job's weights (under\n"
                   "--state-dir DIR of a run, or --artifact-root DIR), so the curves outlive the cluster.\n",
               .options = Plus({Output("FILE"), {"artifact-root", "DIR"}}, MetricsApiOptions()),
               .run = ReportCommand});
  t.push_back(
      {.name = "healthcheck",
       .synopsis = "HOST:PORT [--service NAME] [--timeout SECONDS] [--tls-ca FILE] [--tls-server-name NAME]",
       .summary = "exit 0 when the server answers grpc.health.v1 SERVING (for probes)",
       .example = "gradsync healthcheck localhost:7070",
       .options = {{"service", "NAME"}, {"timeout", "SECONDS"}, {"tls-ca", "FILE"}, {"tls-server-name", "NAME"}},
       .run = HealthCommand});
  t.push_back({.name = "model describe",
               .synopsis = "PRESET [--set transformer.x=v ...]",
               .summary = "a transformer preset's dimensions, parameters and FLOPs per token",
               .example = "gradsync model describe gpt-tiny --set transformer.layers=6",
               .details = "PRESET: gpt-tiny, gpt2-124m or minimind-26m. --set paths are relative to the model spec,\n"
                          "e.g. --set transformer.flavour=llama.\n",
               .options = {{"set", "path=value"}, Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kWords,
               .words = {"gpt-tiny", "gpt2-124m", "minimind-26m"},
               .run = ModelCommand});
  t.push_back({.name = "model logits",
               .synopsis = "WEIGHTS --tokens ID,... [--preset P] [--set path=value ...]",
               .summary = "the logits of fixed tokens, as JSON (comparisons with other frameworks)",
               .example = "gradsync model logits weights.bin --tokens 1,2,3",
               .details = "WEIGHTS is anything model.initFrom reads; --preset names the model when the file does\n"
                          "not (a safetensors file from elsewhere). Prints {\"vocab\": V, \"logits\": [[V values] per\n"
                          "token]} with every float exactly (9 significant digits).\n",
               .options = {{"tokens", "ID,..."}, {"preset", "P"}, {"set", "path=value"}},
               .operands = Operands::kFiles,
               .run = ModelCommand});
  t.push_back({.name = "checkpoint inspect",
               .synopsis = "PATH",
               .summary = "a checkpoint's manifest, parts and tensors, verified",
               .example = "gradsync checkpoint inspect /tmp/gradsync-local/artifacts/mlp-1a2b3/step-00000100",
               .details = "PATH: a checkpoint directory (rank 0's part is read), a rank part file, or a weights file\n"
                          "(weights.bin, or an export of gradsync export: safetensors or llm.c). Exit 0 when\n"
                          "everything read is intact, 1 when something is missing or corrupt.\n",
               .options = {Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = CheckpointCommand});
  t.push_back({.name = "checkpoint diff",
               .synopsis = "A B",
               .summary = "per-tensor differences (max abs and rel) between two checkpoints or weights files",
               .example = "gradsync checkpoint diff run1/weights.bin run2/weights.bin",
               .options = {Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = CheckpointCommand});
  t.push_back({.name = "checkpoint list",
               .synopsis = "(--root DIR | JOB)",
               .summary = "committed checkpoints, verified when their files are on this machine",
               .example = "gradsync checkpoint list jobs/mlp-1a2b3",
               .details = "--root DIR lists the checkpoints under DIR; JOB asks the coordinator for the job's.\n",
               .options = Plus({{"root", "DIR"}, Output()}, ConnectionOptions()),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = CheckpointCommand});
  t.push_back({.name = "checkpoint save",
               .synopsis = "JOB [--wait]",
               .summary = "ask a running job to checkpoint at its next step boundary",
               .example = "gradsync checkpoint save jobs/mlp-1a2b3 --wait",
               .details = "With --wait, waits until the checkpoint is committed and prints its step and directory\n"
                          "(exit 1 when the job ends first without one).\n",
               .options = Plus({{"wait", ""}, Output()}, ConnectionOptions()),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = CheckpointCommand});
  t.push_back({.name = "data prepare",
               .synopsis = "TEXT... -o DIR [--tokenizer TOK] [--val-fraction F] [--shard-tokens N]",
               .summary = "tokenise text files into llm.c shards (train_*.bin, val_*.bin)",
               .example = "gradsync data prepare 'corpus/*.txt' -o shards --val-fraction 0.05",
               .details =
                   "TEXT: files or globs, concatenated in order. Shards of at most N tokens (default\n"
                   "100000000); with F > 0 the last F of the tokens go to DIR/val_*.bin. TOK: a tokenizer.json,\n"
                   "GPT-2's encoder.json + vocab.bpe (or their directory) or a SentencePiece .model; without\n"
                   "it, one token per byte (vocabulary 256). Tokens are uint16 when the vocabulary has at most\n"
                   "65536 ids, else uint32 (llm.c's Llama 3 layout). DIR/shards.json records the tokenizer.\n",
               .options = {Output("DIR"), {"tokenizer", "TOK"}, {"val-fraction", "F"}, {"shard-tokens", "N"}},
               .operands = Operands::kFiles,
               .run = DataCommand});
  t.push_back({.name = "generate",
               .synopsis = "--weights PATH --prompt TEXT [--tokenizer TOK] [--tokens N] [--temperature T]\n"
                           "    [--top-k K] [--seed S]",
               .summary = "continue TEXT with tokens sampled from a trained transformer",
               .example = "gradsync generate --weights weights.bin --prompt 'Once upon a time' --tokens 100",
               .details = "PATH: a weights file, a committed checkpoint directory or an export. N tokens (default\n"
                          "200); T: softmax temperature (default 0.8; 0 picks the likeliest token); K: sample among\n"
                          "the K likeliest tokens only (default 0: all); the same S (default 0) gives the same text.\n"
                          "TOK: the tokenizer the model was trained with (tokenizer.json, GPT-2's encoder.json +\n"
                          "vocab.bpe or their directory, a SentencePiece .model); without it tokens are bytes.\n",
               .options = {{"weights", "PATH"},
                           {"prompt", "TEXT"},
                           {"tokenizer", "TOK"},
                           {"tokens", "N"},
                           {"temperature", "T"},
                           {"top-k", "K"},
                           {"seed", "S"}},
               .run = GenerateCommand});
  t.push_back({.name = "export",
               .synopsis = "SRC --format hf|gradsync|llmc -o OUT",
               .summary = "weights or a committed checkpoint as safetensors (with config.json) or llm.c's format",
               .example = "gradsync export weights.bin --format hf -o gpt-hf",
               .details = "SRC: a weights file, a committed checkpoint directory (rank 0's parameters) or an\n"
                          "earlier export. hf: OUT/model.safetensors and OUT/config.json with Hugging Face's names\n"
                          "(GPT2LMHeadModel, LlamaForCausalLM); gradsync: the same with gradsync's names; llmc: the\n"
                          "file OUT in llm.c's GPT-2 checkpoint format.\n",
               .options = {{"format", "hf|gradsync|llmc"}, Output("OUT")},
               .operands = Operands::kFiles,
               .run = ExportCommand});
  t.push_back({.name = "version",
               .synopsis = "",
               .summary = "the version, git commit and CUDA build (also gradsync --version)",
               .example = "gradsync version -o json",
               .options = {Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .run = VersionCommand});
  t.push_back({.name = "completion",
               .synopsis = "bash|zsh",
               .summary = "a shell completion script for gradsync's commands, subcommands and options",
               .example = "source <(gradsync completion bash)",
               .details = "bash: source it from ~/.bashrc. zsh: save it as _gradsync in a directory of $fpath, or\n"
                          "source it after compinit.\n",
               .operands = Operands::kWords,
               .words = {"bash", "zsh"},
               .run = CompletionCommand});
  return t;
}

std::string FirstWord(absl::string_view name) { return std::string(name.substr(0, name.find(' '))); }

std::string FormatsSynopsis(const Command& c) {
  if (c.formats.empty()) return "";
  std::vector<std::string> names;
  for (OutputFormat f : c.formats) names.emplace_back(OutputFormatName(f));
  return absl::StrCat(" [-o ", absl::StrJoin(names, "|"), "]");
}

// "--set path=value, --wait, -o/--output FORMAT" for the options not among the connection ones.
std::string OptionsText(const Command& c) {
  std::vector<std::string> own, connection;
  for (const OptionDoc& o : c.options) {
    const bool reaches = c.connects && std::any_of(ConnectionOptions().begin(), ConnectionOptions().end(),
                                                   [&](const OptionDoc& co) { return co.name == o.name; });
    const std::string value = o.name == "output" && !c.formats.empty() ? DescribeFormats(c.formats) : o.value;
    std::string text = absl::StrCat(o.short_name != 0 ? absl::StrCat("-", std::string(1, o.short_name), ", ") : "",
                                    "--", o.name, value.empty() ? "" : " " + value);
    (reaches ? connection : own).push_back(std::move(text));
  }
  std::string out;
  if (!own.empty()) absl::StrAppend(&out, "  ", absl::StrJoin(own, "\n  "), "\n");
  if (!connection.empty()) absl::StrAppend(&out, "  connection: ", absl::StrJoin(connection, ", "), "\n");
  return out;
}

std::string Indented(absl::string_view text, absl::string_view indent) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty()))
    absl::StrAppend(&out, indent, line, "\n");
  return out;
}

// Whether `arg` is an option of one of `entries` whose value is the next argument.
bool ValueFollows(const std::vector<const Command*>& entries, absl::string_view arg) {
  absl::string_view name;
  char short_name = 0;
  if (absl::StartsWith(arg, "--") && arg.find('=') == absl::string_view::npos) {
    name = arg.substr(2);
  } else if (arg.size() == 2 && arg[0] == '-' && arg[1] != '-') {
    short_name = arg[1];
  } else {
    return false;
  }
  for (const Command* c : entries) {
    for (const OptionDoc& o : c->options) {
      if ((!name.empty() && o.name == name) || (short_name != 0 && o.short_name == short_name)) return o.TakesValue();
    }
  }
  return false;
}

}  // namespace

const std::vector<Command>& Commands() {
  static const auto* table = new std::vector<Command>(MakeTable());
  return *table;
}

const Command* FindCommand(absl::string_view name) {
  for (const Command& c : Commands()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<const Command*> CommandsOf(absl::string_view word) {
  std::vector<const Command*> out;
  for (const Command& c : Commands()) {
    if (FirstWord(c.name) == word) out.push_back(&c);
  }
  return out;
}

std::vector<std::string> SubcommandsOf(absl::string_view word) {
  std::vector<std::string> out;
  for (const Command* c : CommandsOf(word)) {
    const size_t space = c->name.find(' ');
    if (space != std::string::npos) out.push_back(c->name.substr(space + 1));
  }
  return out;
}

std::vector<OptionSpec> OptionsOf(absl::string_view word) {
  std::vector<OptionSpec> specs;
  for (const Command* c : CommandsOf(word)) {
    for (const OptionDoc& o : c->options) {
      const bool present =
          std::any_of(specs.begin(), specs.end(), [&](const OptionSpec& have) { return have.name == o.name; });
      if (!present) specs.push_back({o.name, o.TakesValue(), o.short_name});
    }
  }
  return specs;
}

absl::StatusOr<Args> ParseCommandArgs(absl::string_view word, const std::vector<std::string>& argv) {
  return ParseArgs(std::string(word), argv, OptionsOf(word));
}

std::string UsageLine(const Command& c) {
  return absl::StrCat("usage: gradsync ", c.name, c.synopsis.empty() ? "" : " ", c.synopsis, FormatsSynopsis(c),
                      c.connects ? " [connection options]" : "", "\n");
}

std::string GroupUsage(absl::string_view word) {
  std::string out;
  for (const Command* c : CommandsOf(word)) absl::StrAppend(&out, UsageLine(*c));
  absl::StrAppend(&out, "(gradsync ", word, " --help: the options and an example)\n");
  return out;
}

std::string CommandHelp(const Command& c) {
  std::string out = absl::StrCat(UsageLine(c), "\n", c.summary, "\n");
  if (!c.details.empty()) absl::StrAppend(&out, "\n", c.details);
  if (!c.options.empty()) absl::StrAppend(&out, "\nOptions:\n", OptionsText(c));
  absl::StrAppend(&out, "\nExample:\n", Indented(c.example, "  "));
  if (c.connects) absl::StrAppend(&out, "\n", kReachingACluster);
  return out;
}

std::string GroupHelp(absl::string_view word) {
  const std::vector<const Command*> entries = CommandsOf(word);
  if (entries.size() == 1 && entries[0]->name == word) return CommandHelp(*entries[0]);
  std::string out = absl::StrCat("gradsync ", word, ": ", absl::StrJoin(SubcommandsOf(word), " | "), "\n");
  for (const Command* c : entries) absl::StrAppend(&out, "\n", CommandHelp(*c));
  return out;
}

std::string OverallUsage() {
  std::string out =
      "usage: gradsync COMMAND [ARGS]      (gradsync COMMAND --help: its options and an example)\n"
      "\n";
  for (const Command& c : Commands()) {
    absl::StrAppend(&out, "  ", c.name, c.synopsis.empty() ? "" : " ", c.synopsis, FormatsSynopsis(c),
                    c.connects ? " [connection options]" : "", "\n", "                     ", c.summary, "\n");
  }
  absl::StrAppend(&out, "\n", kReachingACluster,
                  "\nJob specs are YAML or JSON with the JSON names of gradsync.v1.JobSpec, e.g. "
                  "training.worldSize.\n"
                  "Exit codes: 0 success, 1 failure, 2 bad usage or input, 130 interrupted.\n");
  return out;
}

bool WantsHelp(const std::vector<const Command*>& entries, const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return false;
    if (a == "--help" || a == "-h") return true;
    if (ValueFollows(entries, a)) ++i;
  }
  return false;
}

std::string FirstOperand(const std::vector<const Command*>& entries, const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return i + 1 < argv.size() ? argv[i + 1] : "";
    if (a.size() < 2 || a[0] != '-') return a;
    if (ValueFollows(entries, a)) ++i;
  }
  return "";
}

}  // namespace gradsync::cli
