// Checkpoint files as a restarted job reads them: a rank part (ReadRankPart) or a manifest
// (ReadManifest, then VerifyCheckpoint over the parts it names).
//
// Input: one mode byte, then the file. Mode bit 0 picks the manifest; for a part, bit 1 makes the
// part self-consistent first (the header's size field set to the file's size and the trailing
// checksum its version names appended: XXH3-64 for version 3, FNV-1a before), so the fuzzer
// reaches the decoder behind the checksum instead of stopping at it. A part that reads back is
// written again and must read back the same.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz_support.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/checksum.h"

namespace gradsync::fuzz {
namespace {

constexpr size_t kVersionField = 8;  // after "GSCKPART"
constexpr size_t kSizeField = 12;    // after the u32 version

std::string SelfConsistent(std::string part) {
  const uint64_t bytes = part.size() + sizeof(uint64_t);
  if (part.size() >= kSizeField + sizeof(bytes)) std::memcpy(part.data() + kSizeField, &bytes, sizeof(bytes));
  uint32_t version = 0;
  if (part.size() >= kVersionField + sizeof(version))
    std::memcpy(&version, part.data() + kVersionField, sizeof(version));
  ckpt::StreamingChecksum sum(version >= 3 ? ckpt::ChecksumAlgorithm::kXxh3_64 : ckpt::ChecksumAlgorithm::kFnv1a64);
  sum.Update(std::as_bytes(std::span<const char>(part.data(), part.size())));
  const uint64_t hash = sum.Value();
  part.append(reinterpret_cast<const char*>(&hash), sizeof(hash));
  return part;
}

// Bitwise, so that NaN values (which the file may hold) compare equal to themselves.
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void CheckRoundTrip(const ckpt::RankState& state) {
  GRADSYNC_FUZZ_CHECK(static_cast<int64_t>(state.params.size()) == state.layout.total_numel(), "parameter count");
  GRADSYNC_FUZZ_CHECK(state.adam_m.size() == state.adam_v.size(), "moment counts");
  const std::string dir = ScratchDir() + "/rewritten";
  std::filesystem::remove_all(dir);  // one part at a time, whatever rank the last one held
  const absl::StatusOr<v1::CheckpointPart> part = ckpt::WriteRankPart(dir, state);
  if (!part.ok()) return;  // a part may hold a rank outside its world, which a writer refuses
  const absl::StatusOr<ckpt::RankState> again = ckpt::ReadRankPart(dir, *part);
  GRADSYNC_FUZZ_CHECK(again.ok(), again.status().ToString());
  GRADSYNC_FUZZ_CHECK(SameBits(again->params, state.params) && SameBits(again->adam_m, state.adam_m) &&
                          again->layout.Hash() == state.layout.Hash() && again->step == state.step &&
                          again->job_id == state.job_id,
                      "a part read back differs");
}

}  // namespace
}  // namespace gradsync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  fuzz::ByteReader in(data, size);
  const auto mode = in.Get<uint8_t>();
  std::string file = in.Rest();
  if (mode & 1) {
    // A directory of its own: the parts the manifest names are never there, or another input's.
    const std::string dir = fuzz::ScratchDir() + "/manifest/step-000000001";
    fuzz::WriteScratchFile("manifest/step-000000001/" + std::string(ckpt::kManifestFile), file);
    if (ckpt::ReadManifest(dir).ok()) (void)ckpt::VerifyCheckpoint(dir);
    return 0;
  }
  if (mode & 2) file = fuzz::SelfConsistent(std::move(file));
  const absl::StatusOr<ckpt::RankState> state = ckpt::ReadRankPart(fuzz::WriteScratchFile("part/rank-00000.bin", file));
  if (state.ok()) fuzz::CheckRoundTrip(*state);
  return 0;
}
