#include "gradsync/spec/job_paths.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync::spec {
namespace {

constexpr size_t kMaxSubdirLength = 64;

google::protobuf::RepeatedPtrField<std::string>* MutablePaths(v1::DataSpec* data) {
  if (data->has_text()) return data->mutable_text()->mutable_paths();
  if (data->has_shards()) return data->mutable_shards()->mutable_paths();
  return nullptr;
}

}  // namespace

std::vector<DataPath> DataPaths(const v1::JobSpec& spec) {
  const v1::DataSpec& data = spec.data();
  if (!data.has_text() && !data.has_shards()) return {};
  const char* field = data.has_text() ? "data.text.paths" : "data.shards.paths";
  const auto& paths = data.has_text() ? data.text().paths() : data.shards().paths();
  std::vector<DataPath> out;
  for (int i = 0; i < paths.size(); ++i) out.push_back({absl::StrCat(field, "[", i, "]"), paths[i]});
  return out;
}

absl::Status ConfineDataPaths(const ConfinedRoots& data_roots, v1::JobSpec* spec) {
  std::vector<std::string> resolved;
  for (const DataPath& p : DataPaths(*spec)) {
    absl::StatusOr<std::string> r = data_roots.Resolve(p.field, p.path);
    if (!r.ok()) return r.status();
    if (absl::Status s = data_roots.CheckMatches(p.field, *r); !s.ok()) return s;
    resolved.push_back(*std::move(r));
  }
  google::protobuf::RepeatedPtrField<std::string>* paths = MutablePaths(spec->mutable_data());
  for (size_t i = 0; i < resolved.size(); ++i) *paths->Mutable(static_cast<int>(i)) = std::move(resolved[i]);
  return absl::OkStatus();
}

absl::Status CheckDataFiles(const v1::JobSpec& spec, const ConfinedRoots& data_roots) {
  for (const DataPath& p : DataPaths(spec)) {
    if (absl::Status s = data_roots.CheckMatches(p.field, p.path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool IsCheckpointSubdir(const std::string& dir) {
  if (dir.empty()) return true;
  if (dir.size() > kMaxSubdirLength || dir[0] == '.') return false;
  for (char c : dir) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace gradsync::spec
