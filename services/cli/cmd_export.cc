// gradsync export SRC --format hf|gradsync|llmc -o OUT: a model's weights (a weights file or a
// committed checkpoint directory) in another layout (gradsync/ckpt/interchange.h). Needs no cluster.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/core/args.h"
#include "hf_package.h"

namespace gradsync::cli {
namespace {

// The usage lines from the command table, for errors.
std::string Usage() { return std::string(absl::StripSuffix(GroupUsage("export"), "\n")); }

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

// The tokenizer and context length --tokenizer, --shards and --max-positions ask for; only hf
// takes them (INVALID_ARGUMENT otherwise, naming the option).
absl::StatusOr<HfPackage> PackageOf(const Args& args, ckpt::WeightsFormat format) {
  HfPackage package;
  for (const char* option : {"tokenizer", "shards", "max-positions"}) {
    if (args.Has(option) && format != ckpt::WeightsFormat::kHf) {
      return absl::InvalidArgumentError(absl::StrCat("--", option, ": only --format hf carries a tokenizer"));
    }
  }
  if (args.Has("tokenizer") && args.Has("shards")) return absl::InvalidArgumentError("give --tokenizer or --shards, not both");
  package.tokenizer = args.Get("tokenizer");
  if (args.Has("shards")) {
    absl::StatusOr<std::string> tok = TokenizerOfShards(args.Get("shards"));
    if (!tok.ok()) return tok.status();
    package.tokenizer = *tok;
  }
  if (args.Has("max-positions")) {
    absl::StatusOr<int> n = args.GetInt("max-positions", 0, 1, 1 << 30);
    if (!n.ok()) return n.status();
    package.max_positions = *n;
  }
  return package;
}

}  // namespace

int ExportCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("export", argv);
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", Usage()), 2);
  if (args->positional.size() != 1 || !args->Has("format") || !args->Has("output")) return Fail(Usage(), 2);
  absl::StatusOr<ckpt::WeightsFormat> format = ckpt::ParseWeightsFormat(args->Get("format"), "--format");
  if (!format.ok()) return Fail(std::string(format.status().message()), 2);
  const std::string& source = args->positional[0];
  absl::StatusOr<ckpt::WeightsFile> weights = ckpt::ReadModelWeights(source);
  if (!weights.ok()) return Fail(absl::StrCat("gradsync export: ", weights.status().message()), 1);
  const std::string out = args->Get("output");
  absl::StatusOr<HfPackage> package = PackageOf(*args, *format);
  if (!package.ok()) return Fail(std::string(package.status().message()), 2);
  if (absl::Status s = ckpt::ExportWeights(*weights, *format, out); !s.ok()) {
    return Fail(absl::StrCat("gradsync export: ", s.message()), absl::IsInvalidArgument(s) ? 2 : 1);
  }
  std::string beside;
  if (*format == ckpt::WeightsFormat::kHf) {
    absl::StatusOr<std::vector<std::string>> added = CompleteHfExport(out, *package);
    if (!added.ok()) {
      return Fail(absl::StrCat("gradsync export: ", added.status().message()), absl::IsInvalidArgument(added.status()) ? 2 : 1);
    }
    beside = absl::StrCat("; with ", absl::StrJoin(*added, ", "));
    if (package->tokenizer.empty()) {
      std::fprintf(stderr,
                   "no tokenizer files in %s: from_pretrained loads the model, AutoTokenizer needs them "
                   "(--tokenizer TOK, or --shards DIR of the data it trained on)\n",
                   out.c_str());
    }
  }
  std::printf("wrote %s (%s, %d tensors, %lld parameters%s)\n", out.c_str(), args->Get("format").c_str(),
              weights->layout.size(), static_cast<long long>(weights->layout.total_numel()), beside.c_str());
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> ExportRows() {
  std::vector<Command> t;
  t.push_back({.name = "export",
               .synopsis = "SRC --format hf|gradsync|llmc -o OUT [--tokenizer TOK | --shards DIR] [--max-positions N]",
               .summary = "weights or a committed checkpoint as safetensors (with config.json) or llm.c's format",
               .example = "gradsync export weights.bin --format hf -o gpt-hf",
               .details = "SRC: a weights file, a committed checkpoint directory (rank 0's parameters) or an\n"
                          "earlier export. hf: OUT/model.safetensors and OUT/config.json with Hugging Face's names\n"
                          "(GPT2LMHeadModel, LlamaForCausalLM); gradsync: the same with gradsync's names; llmc: the\n"
                          "file OUT in llm.c's GPT-2 checkpoint format.\n"
                          "hf also writes generation_config.json and, with --tokenizer TOK (or --shards DIR: the\n"
                          "tokenizer its shards.json names), the tokenizer's files under transformers' names and its\n"
                          "bos/eos ids, so that from_pretrained(OUT) loads model and tokenizer alike. --max-positions N\n"
                          "declares a llama's context (max_position_embeddings; default the seqLen it trained at).\n",
               .options = {{"format", "hf|gradsync|llmc"}, Output("OUT"), {"tokenizer", "TOK"}, {"shards", "DIR"},
                           {"max-positions", "N"}},
               .operands = Operands::kFiles,
               .run = ExportCommand});
  return t;
}

}  // namespace gradsync::cli
