#include "gradsync/core/daemon_flags.h"

#include <cstdlib>
#include <iostream>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "gradsync/core/build_info.h"

namespace gradsync {
namespace {

// Flags are registered under the path their source was compiled from (absolute in our builds);
// help shows it from "services/" on, the same on every machine.
std::string ShortFilename(absl::string_view file) {
  const size_t at = file.rfind("services/");
  return std::string(at == absl::string_view::npos ? file : file.substr(at));
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
  // absl::ParseCommandLine exits 1 after printing --help, which scripts and probes read as a
  // failure: parse without the usage flags, then answer them here. These internal entry points
  // are what ParseCommandLine calls in Abseil 20220623, the release every build uses.
  absl::flags_internal::ParseCommandLineImpl(argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
                                             absl::flags_internal::UsageFlagsAction::kIgnoreUsage,
                                             absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  if (absl::flags_internal::HandleUsageFlags(std::cout, absl::ProgramUsageMessage()) >= 0) {
    std::cout.flush();
    std::exit(0);
  }
}

}  // namespace gradsync
