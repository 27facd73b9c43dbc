// gradsync version: what this build is (version, git commit, CUDA toolkit), the same line the
// daemons print for --version.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "args.h"
#include "commands.h"
#include "gradsync/core/build_info.h"
#include "gradsync/core/json_string.h"

namespace gradsync::cli {
namespace {

constexpr char kUsage[] = "usage: gradsync version [-o json]\n";

// {"version": "0.1.0", "commit": "1a2b3c4", "cuda": "12.6"}; "cuda" is "none" without CUDA.
std::string Json() {
  const BuildInfo& info = GetBuildInfo();
  return absl::StrCat("{\"version\": ", JsonString(info.version), ", \"commit\": ", JsonString(info.commit),
                      ", \"cuda\": ", JsonString(info.cuda), "}\n");
}

}  // namespace

int VersionCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseArgs("version", argv, {{"output", true, 'o'}});
  if (!args.ok() || !args->positional.empty()) {
    if (!args.ok()) std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string output = args->Get("output", "text");
  if (output != "text" && output != "json") {
    std::fprintf(stderr, "gradsync version: -o: expected text or json, got \"%s\"\n%s", output.c_str(), kUsage);
    return 2;
  }
  const std::string text = output == "json" ? Json() : VersionLine("gradsync") + "\n";
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace gradsync::cli
