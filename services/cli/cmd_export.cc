// gradsync export SRC --format hf|gradsync|llmc -o OUT: a model's weights (a weights file or a
// committed checkpoint directory) in another layout (gradsync/ckpt/interchange.h). Needs no cluster.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/core/args.h"

namespace gradsync::cli {
namespace {

// The usage lines from the command table, for errors.
std::string Usage() { return std::string(absl::StripSuffix(GroupUsage("export"), "\n")); }

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
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
  if (absl::Status s = ckpt::ExportWeights(*weights, *format, out); !s.ok()) {
    return Fail(absl::StrCat("gradsync export: ", s.message()), absl::IsInvalidArgument(s) ? 2 : 1);
  }
  std::printf("wrote %s (%s, %d tensors, %lld parameters)\n", out.c_str(), args->Get("format").c_str(),
              weights->layout.size(), static_cast<long long>(weights->layout.total_numel()));
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> ExportRows() {
  std::vector<Command> t;
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
  return t;
}

}  // namespace gradsync::cli
