#include "spec_input.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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

}  // namespace gradsync::cli
