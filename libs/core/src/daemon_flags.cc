#include "gradsync/core/daemon_flags.h"

#include <cstdlib>
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "gradsync/core/build_info.h"

namespace gradsync {
namespace {

// Flags are registered under the path their source was compiled from (absolute in our builds);
// help shows it from "services/" on, the same on every machine.
std::string ShortFilename(absl::string_view file) {
  const size_t at = file.rfind("services/");
  return std::string(at == absl::string_view::npos ? file : file.substr(at));
}

// A flag's name as written on the command line: "--state-dir=x" and "--state-dir" give
// "state-dir"; "" for anything that is not a long flag.
absl::string_view WrittenName(absl::string_view arg) {
  if (!absl::ConsumePrefix(&arg, "--") || arg.empty()) return "";
  return arg.substr(0, arg.find('='));
}

// Rewrites, in place, each flag of argv written with dashes (--state-dir) whose underscore
// spelling is a defined flag (--state_dir) to that spelling, up to a "--": both are accepted,
// the dashed one, which the CLI speaks too, canonical. Every string of argv stays where it is.
void AcceptDashedFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return;
    const absl::string_view name = WrittenName(arg);
    if (name.find('-') == absl::string_view::npos) continue;
    const std::string underscored = absl::StrReplaceAll(name, {{"-", "_"}});
    if (absl::FindCommandLineFlag(underscored) == nullptr) continue;
    std::copy(underscored.begin(), underscored.end(), argv[i] + 2);
  }
}

// `help` with every defined flag's name written as the dashed, canonical spelling.
std::string DashedHelp(const std::string& help) {
  std::string out;
  size_t at = 0;
  for (size_t flag = help.find("--"); flag != std::string::npos; flag = help.find("--", at)) {
    size_t end = flag + 2;
    while (end < help.size() && (absl::ascii_isalnum(help[end]) || help[end] == '_')) ++end;
    std::string name = help.substr(flag + 2, end - flag - 2);
    if (name.find('_') != std::string::npos && absl::FindCommandLineFlag(name) != nullptr) {
      name = absl::StrReplaceAll(name, {{"_", "-"}});
    }
    absl::StrAppend(&out, help.substr(at, flag - at), "--", name);
    at = end;
  }
  return out + help.substr(at);
}

}  // namespace

void ParseDaemonFlags(int argc, char** argv, const DaemonFlagsOptions& options) {
  absl::SetProgramUsageMessage(options.usage);
  absl::FlagsUsageConfig config;
  // Abseil's default matches files named after the program (gradsync-worker.cc); ours are main.cc.
  const auto own = [dir = options.flags_dir](absl::string_view file) { return absl::StrContains(file, dir); };
  config.contains_help_flags = own;
  config.contains_helpshort_flags = own;
  config.version_string = [program = options.program] { return VersionLine(program) + "\n"; };
  config.normalize_filename = ShortFilename;
  absl::SetFlagsUsageConfig(config);
  AcceptDashedFlags(argc, argv);
  // absl::ParseCommandLine exits 1 after printing --help, which scripts and probes read as a
  // failure: parse without the usage flags, then answer them here. These internal entry points
  // are what ParseCommandLine calls in Abseil 20220623, the release every build uses.
  absl::flags_internal::ParseCommandLineImpl(argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
                                             absl::flags_internal::UsageFlagsAction::kIgnoreUsage,
                                             absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  std::ostringstream help;
  if (absl::flags_internal::HandleUsageFlags(help, absl::ProgramUsageMessage()) >= 0) {
    std::cout << DashedHelp(help.str());
    std::cout.flush();
    std::exit(0);
  }
}

}  // namespace gradsync
