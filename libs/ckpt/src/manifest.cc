// MANIFEST.json: the commit record of a checkpoint, and verification of the parts it lists.
#include <filesystem>
#include <set>

#include "gradsync/core/json_depth.h"
#include "absl/strings/str_cat.h"
#include "file_io.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/ckpt/checkpoint.h"

namespace gradsync::ckpt {
namespace {

std::string ManifestPath(const std::string& dir) { return (std::filesystem::path(dir) / kManifestFile).string(); }

// DATA_LOSS naming the part unless its file has the recorded size and checksum, computed with the
// algorithm the recorded checksum names.
absl::Status VerifyPart(const std::string& dir, const v1::CheckpointPart& part) {
  const std::string path = (std::filesystem::path(dir) / part.file()).string();
  if (part.file().empty() || part.file().find('/') != std::string::npos) {
    return absl::DataLossError(
        absl::StrCat(dir, ": the manifest names \"", part.file(), "\" for rank ", part.rank(), ", not a file name"));
  }
  absl::StatusOr<ChecksumAlgorithm> algorithm = DigestAlgorithm(part.checksum(), path);
  if (!algorithm.ok()) return algorithm.status();
  absl::StatusOr<FileDigest> digest = DigestFile(path, *algorithm, Links::kRefuse);
  if (absl::IsNotFound(digest.status())) {
    return absl::DataLossError(absl::StrCat(path, ": missing (listed in the manifest for rank ", part.rank(), ")"));
  }
  if (!digest.ok()) return digest.status();
  if (digest->bytes != part.bytes()) {
    return absl::DataLossError(absl::StrCat(path, ": ", digest->bytes, " bytes, the manifest says ", part.bytes()));
  }
  if (digest->digest != part.checksum()) {
    return absl::DataLossError(
        absl::StrCat(path, ": checksum ", digest->digest, " differs from the manifest's ", part.checksum()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteManifest(const std::string& dir, const v1::CheckpointManifest& manifest) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  if (auto s = google::protobuf::util::MessageToJsonString(manifest, &json, options); !s.ok()) {
    return absl::InternalError(absl::StrCat("cannot encode the manifest for ", dir, ": ", s.ToString()));
  }
  return WriteFileAtomically(ManifestPath(dir), json);
}

absl::StatusOr<v1::CheckpointManifest> ReadManifest(const std::string& dir) {
  const std::string path = ManifestPath(dir);
  absl::StatusOr<std::string> json = ReadWholeFile(path);
  if (absl::IsNotFound(json.status())) {
    return absl::NotFoundError(absl::StrCat(path, ": no manifest (the checkpoint was not committed)"));
  }
  if (!json.ok()) return json.status();
  if (absl::Status s = CheckJsonDepth(*json, path); !s.ok()) return absl::DataLossError(s.message());
  v1::CheckpointManifest manifest;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto s = google::protobuf::util::JsonStringToMessage(*json, &manifest, options); !s.ok()) {
    return absl::DataLossError(absl::StrCat(path, ": unreadable manifest: ", s.ToString()));
  }
  return manifest;
}

absl::Status VerifyCheckpoint(const std::string& dir) {
  absl::StatusOr<v1::CheckpointManifest> manifest = ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  std::set<int32_t> ranks;
  for (const v1::CheckpointPart& part : manifest->parts()) ranks.insert(part.rank());
  const bool every_rank = manifest->world_size() >= 1 && ranks.size() == static_cast<size_t>(manifest->world_size()) &&
                          manifest->parts_size() == manifest->world_size() && *ranks.begin() == 0 &&
                          *ranks.rbegin() == manifest->world_size() - 1;
  if (!every_rank) {
    return absl::DataLossError(absl::StrCat(ManifestPath(dir), ": ", manifest->parts_size(),
                                            " parts do not cover ranks 0..", manifest->world_size() - 1));
  }
  for (const v1::CheckpointPart& part : manifest->parts()) {
    if (absl::Status s = VerifyPart(dir, part); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gradsync::ckpt
