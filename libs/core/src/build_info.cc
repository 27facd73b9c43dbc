#include "gradsync/core/build_info.h"

namespace gradsync {
namespace build_internal {
// Defined in the generated build_values.cc.
extern const char kVersion[];
extern const char kCommit[];
extern const char kCuda[];
}  // namespace build_internal

const BuildInfo& GetBuildInfo() {
  static const BuildInfo info{build_internal::kVersion, build_internal::kCommit, build_internal::kCuda};
  return info;
}

std::string VersionLine(std::string_view program) {
  const BuildInfo& info = GetBuildInfo();
  const std::string cuda = info.cuda == "none" ? "no CUDA" : "CUDA " + std::string(info.cuda);
  return std::string(program) + " " + std::string(info.version) + " (commit " + std::string(info.commit) + ", " + cuda +
         ")";
}

}  // namespace gradsync
