// Command-line flags of the daemons (gradsync-coordinator, gradsync-worker, gradsync-metrics).
#pragma once

#include <string>

namespace gradsync {

struct DaemonFlagsOptions {
  std::string program;    // "gradsync-worker": the first word of --version
  std::string usage;      // the line above the flags in --help
  std::string flags_dir;  // "services/worker/": --help lists the flags defined in files under it
};

// Parses argv as absl::ParseCommandLine does: an unknown flag or a bad value prints the problem
// and exits 1. A flag is written with dashes (--state-dir, canonical: the CLI's spelling too) or
// with underscores (--state_dir, accepted); --help shows the dashed spelling. --help (and --helpshort) print the usage and the daemon's own flags, --version
// prints VersionLine(program), and both exit 0; --helpfull lists every flag. Call once, from main,
// before any other thread starts. Positional arguments are ignored.
void ParseDaemonFlags(int argc, char** argv, const DaemonFlagsOptions& options);

}  // namespace gradsync
