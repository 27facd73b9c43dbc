// gradsync version [-o table|json|yaml]: what this build is (version, git commit, CUDA toolkit), the same line the
// daemons print for --version.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "gradsync/core/args.h"
#include "gradsync/core/build_info.h"
#include "gradsync/core/json_string.h"
#include "output_format.h"

namespace gradsync::cli {
namespace {

// {"version": "0.1.0", "commit": "1a2b3c4", "cuda": "12.6"}; "cuda" is "none" without CUDA.
std::string Json() {
  const BuildInfo& info = GetBuildInfo();
  return absl::StrCat("{\"version\": ", JsonString(info.version), ", \"commit\": ", JsonString(info.commit),
                      ", \"cuda\": ", JsonString(info.cuda), "}\n");
}

}  // namespace

int VersionCommand(const std::vector<std::string>& argv) {
  const std::string usage = UsageLine(*FindCommand("version"));
  absl::StatusOr<Args> args = ParseCommandArgs("version", argv);
  absl::StatusOr<OutputFormat> format = args.ok() ? OutputFormatOf("version", *args) : args.status();
  if (!format.ok()) {
    std::fprintf(stderr, "%s\n%s", std::string(format.status().message()).c_str(), usage.c_str());
    return 2;
  }
  if (!args->positional.empty()) {
    std::fputs(usage.c_str(), stderr);
    return 2;
  }
  const std::string text = *format == OutputFormat::kTable ? VersionLine("gradsync") + "\n" : InFormat(Json(), *format);
  std::fputs(text.c_str(), stdout);
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> VersionRows() {
  using F = OutputFormat;
  std::vector<Command> t;
  t.push_back({.name = "version",
               .synopsis = "",
               .summary = "the version, git commit and CUDA build (also gradsync --version)",
               .example = "gradsync version -o json",
               .options = {Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .run = VersionCommand});
  return t;
}

}  // namespace gradsync::cli
