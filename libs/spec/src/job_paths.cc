#include "gradsync/spec/job_paths.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync::spec {
namespace {

constexpr size_t kMaxSubdirLength = 64;
// The default validation shards: what `gradsync data prepare --val-fraction` writes beside its
// train_*.bin shards.
constexpr char kTrainPrefix[] = "train_";
constexpr char kValidationGlob[] = "val_*.bin";
constexpr char kValidationField[] = "data.validation.paths";
constexpr char kScriptDirField[] = "script.workingDir";

// The repeated path fields of `data`, with their names: the training source's, then validation's.
std::vector<std::pair<std::string, google::protobuf::RepeatedPtrField<std::string>*>> MutablePathFields(
    v1::DataSpec* data) {
  std::vector<std::pair<std::string, google::protobuf::RepeatedPtrField<std::string>*>> out;
  if (data->has_text()) out.emplace_back("data.text.paths", data->mutable_text()->mutable_paths());
  if (data->has_shards()) out.emplace_back("data.shards.paths", data->mutable_shards()->mutable_paths());
  if (data->validation().paths_size() > 0) {
    out.emplace_back(kValidationField, data->mutable_validation()->mutable_paths());
  }
  return out;
}

// Whether `pattern` matches at least one file now.
bool MatchesAny(const std::string& pattern) {
  glob_t g{};
  const bool any = ::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0;
  ::globfree(&g);
  return any;
}

}  // namespace

std::vector<DataPath> DataPaths(const v1::JobSpec& spec) {
  v1::DataSpec data = spec.data();
  std::vector<DataPath> out;
  for (const auto& [field, paths] : MutablePathFields(&data)) {
    for (int i = 0; i < paths->size(); ++i) out.push_back({absl::StrCat(field, "[", i, "]"), paths->Get(i)});
  }
  return out;
}

std::vector<std::string> DefaultValidationPaths(const v1::JobSpec& spec) {
  const v1::DataSpec& data = spec.data();
  std::vector<std::string> out;
  if (!data.has_shards() || data.validation().disabled() || data.validation().paths_size() > 0) return out;
  for (const std::string& path : data.shards().paths()) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    if (!absl::StartsWith(path.substr(dir.size()), kTrainPrefix)) continue;
    const std::string candidate = absl::StrCat(dir, kValidationGlob);
    if (std::find(out.begin(), out.end(), candidate) == out.end() && MatchesAny(candidate)) out.push_back(candidate);
  }
  return out;
}

absl::Status ConfineDataPaths(const ConfinedRoots& data_roots, v1::JobSpec* spec) {
  v1::JobSpec confined = *spec;
  for (const auto& [field, paths] : MutablePathFields(confined.mutable_data())) {
    for (int i = 0; i < paths->size(); ++i) {
      const std::string name = absl::StrCat(field, "[", i, "]");
      absl::StatusOr<std::string> r = data_roots.Resolve(name, paths->Get(i));
      if (!r.ok()) return r.status();
      if (absl::Status s = data_roots.CheckMatches(name, *r); !s.ok()) return s;
      *paths->Mutable(i) = *std::move(r);
    }
  }
  // Found beside the resolved training shards, so they lie in the same root; their matches are
  // checked like any other path's.
  const std::vector<std::string> found = DefaultValidationPaths(confined);
  for (size_t i = 0; i < found.size(); ++i) {
    const std::string name = absl::StrCat(kValidationField, "[", i, "]");
    if (absl::Status s = data_roots.CheckMatches(name, found[i]); !s.ok()) return s;
    confined.mutable_data()->mutable_validation()->add_paths(found[i]);
  }
  *spec = std::move(confined);
  return absl::OkStatus();
}

absl::Status CheckDataFiles(const std::vector<DataPath>& paths, const ConfinedRoots& data_roots) {
  for (const DataPath& p : paths) {
    if (absl::Status s = data_roots.CheckMatches(p.field, p.path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ConfineInitFrom(const ConfinedRoots& roots, v1::JobSpec* spec) {
  const std::string& from = spec->model().init_from();
  if (from.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> resolved = roots.Resolve("model.initFrom", from);
  if (!resolved.ok()) return resolved.status();
  if (absl::Status s = roots.CheckMatches("model.initFrom", *resolved); !s.ok()) return s;
  spec->mutable_model()->set_init_from(*std::move(resolved));
  return absl::OkStatus();
}

absl::Status CheckInitFrom(const v1::ModelSpec& model, const ConfinedRoots& roots) {
  if (model.init_from().empty()) return absl::OkStatus();
  return roots.CheckMatches("model.initFrom", model.init_from());
}

bool IsCheckpointSubdir(const std::string& dir) {
  if (dir.empty()) return true;
  if (dir.size() > kMaxSubdirLength || dir[0] == '.') return false;
  for (char c : dir) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

absl::Status ConfineScriptDir(const ConfinedRoots& data_roots, v1::JobSpec* spec) {
  if (!spec->has_script()) return absl::OkStatus();
  absl::StatusOr<std::string> dir = data_roots.Resolve(kScriptDirField, spec->script().working_dir());
  if (!dir.ok()) return dir.status();
  spec->mutable_script()->set_working_dir(*std::move(dir));
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckScriptDir(const v1::ScriptSpec& script, const ConfinedRoots& data_roots) {
  absl::StatusOr<std::string> dir = data_roots.Resolve(kScriptDirField, script.working_dir());
  if (!dir.ok()) return dir.status();
  std::error_code ec;
  if (!std::filesystem::is_directory(*dir, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat(kScriptDirField, ": \"", *dir, "\" is not a directory on this worker (", data_roots.Describe(),
                     "; on a cluster, the script's files must be where every worker sees them)"));
  }
  return dir;
}

}  // namespace gradsync::spec
