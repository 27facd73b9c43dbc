// Which checkpoints a root directory holds, and deleting the ones no longer needed.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gradsync/ckpt/checkpoint.h"

namespace gradsync::ckpt {
namespace {

constexpr char kStepPrefix[] = "step-";

struct StepDir {
  int64_t step = 0;
  std::string path;
  std::optional<v1::CheckpointManifest> manifest;  // set when committed
};

// Every step-<number> directory under `root`, with its manifest when it has a readable one;
// oldest step first.
std::vector<StepDir> ScanRoot(const std::string& root) {
  std::vector<StepDir> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    const std::string name = entry.path().filename().string();
    int64_t step = 0;
    if (!absl::StartsWith(name, kStepPrefix) || !absl::SimpleAtoi(name.substr(sizeof(kStepPrefix) - 1), &step)) {
      continue;
    }
    std::error_code dir_ec;
    if (!entry.is_directory(dir_ec)) continue;
    StepDir d{step, entry.path().string(), std::nullopt};
    if (absl::StatusOr<v1::CheckpointManifest> m = ReadManifest(d.path); m.ok()) d.manifest = *std::move(m);
    out.push_back(std::move(d));
  }
  std::sort(out.begin(), out.end(), [](const StepDir& a, const StepDir& b) { return a.step < b.step; });
  return out;
}

}  // namespace

std::vector<v1::CheckpointManifest> ListCommitted(const std::string& root) {
  std::vector<v1::CheckpointManifest> out;
  for (StepDir& d : ScanRoot(root)) {
    if (!d.manifest) continue;
    d.manifest->set_dir(d.path);
    out.push_back(*std::move(d.manifest));
  }
  std::stable_sort(out.begin(), out.end(), [](const v1::CheckpointManifest& a, const v1::CheckpointManifest& b) {
    return a.step() < b.step();
  });
  return out;
}

absl::Status ApplyRetention(const std::string& root, int keep) {
  const std::vector<StepDir> dirs = ScanRoot(root);
  std::vector<const StepDir*> committed;
  for (const StepDir& d : dirs) {
    if (d.manifest) committed.push_back(&d);
  }
  if (committed.empty()) return absl::OkStatus();
  const int64_t newest = committed.back()->step;
  const size_t kept = static_cast<size_t>(std::max(keep, 1));
  absl::Status first_error;
  auto remove = [&first_error](const std::string& path) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec && first_error.ok())
      first_error = absl::InternalError(absl::StrCat("cannot delete ", path, ": ", ec.message()));
  };
  for (size_t i = 0; i + kept < committed.size(); ++i) remove(committed[i]->path);
  for (const StepDir& d : dirs) {
    if (!d.manifest && d.step < newest) remove(d.path);
  }
  return first_error;
}

}  // namespace gradsync::ckpt
