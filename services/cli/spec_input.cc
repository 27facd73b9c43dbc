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

void MakeDataPathsAbsolute(v1::JobSpec* spec, const std::string& base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path from = base.empty() ? fs::current_path(ec) : fs::path(base);
  if (ec) return;
  auto absolute = [&](std::string* path) {
    if (!path->empty() && (*path)[0] != '/') *path = (from / *path).string();
  };
  v1::DataSpec& data = *spec->mutable_data();
  if (data.has_text()) {
    for (std::string& p : *data.mutable_text()->mutable_paths()) absolute(&p);
  }
  if (data.has_shards()) {
    for (std::string& p : *data.mutable_shards()->mutable_paths()) absolute(&p);
  }
  if (data.has_validation()) {
    for (std::string& p : *data.mutable_validation()->mutable_paths()) absolute(&p);
  }
  if (spec->has_model()) absolute(spec->mutable_model()->mutable_init_from());
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
