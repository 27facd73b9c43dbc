#include "spec_input.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::cli {

absl::StatusOr<v1::JobSpec> LoadSpecFromCommandLine(const std::string& path, const std::vector<std::string>& overrides,
                                                    int workers) {
  std::vector<std::string> all = overrides;
  bool sets_world = false;
  for (const auto& o : overrides) {
    sets_world =
        sets_world || absl::StartsWith(o, "training.worldSize=") || absl::StartsWith(o, "training.world_size=");
  }
  if (workers > 0 && !sets_world) all.push_back(absl::StrCat("training.worldSize=", workers));
  auto spec = spec::LoadJobSpecFile(path, all);
  if (!spec.ok()) return spec.status();
  return spec::Normalize(*std::move(spec));
}

std::vector<std::string> RunDataRoots(const v1::JobSpec& spec) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  std::vector<std::string> roots = {cwd.string()};
  for (const spec::DataPath& p : spec::DataPaths(spec)) {
    fs::path dir;
    const fs::path full = cwd / p.path;
    for (const fs::path& part : full) {
      if (part.string().find_first_of("*?[\\") != std::string::npos) break;
      dir /= part;
    }
    roots.push_back((dir == full ? dir.parent_path() : dir).string());
  }
  return roots;
}

}  // namespace gradsync::cli
