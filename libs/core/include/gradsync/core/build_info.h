// What a binary was built from: the project version, the git commit and the CUDA toolkit. Every
// binary of one build reports the same (--version, `gradsync version`, gradsync_build_info). The
// values are written at build time (cmake/GradsyncBuildInfo.cmake) into target gradsync_version.
#pragma once

#include <string>
#include <string_view>

namespace gradsync {

struct BuildInfo {
  std::string_view version;  // CMake's project version, e.g. "0.1.0"
  std::string_view commit;   // short git commit hash (hex), or "unknown" outside a git checkout
  std::string_view cuda;     // the CUDA toolkit built against, e.g. "12.6", or "none"
};

// Static data: any thread, any time.
const BuildInfo& GetBuildInfo();

// One line for --version: "gradsync-worker 0.1.0 (commit 1a2b3c4, CUDA 12.6)", or with "no CUDA".
std::string VersionLine(std::string_view program);

}  // namespace gradsync
