// The final-weights file as `gradsync generate` and `gradsync export` read it (LoadWeights).
//
// Input: one mode byte, then the file. Mode bit 0 appends the trailing checksum the file's version
// names first (XXH3-64 for version 3, FNV-1a before), so the fuzzer reaches the decoder behind the
// checksum. A file that loads is saved again and must load back the same.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "fuzz_support.h"
#include "gradsync/ckpt/checksum.h"
#include "gradsync/ckpt/weights_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  fuzz::ByteReader in(data, size);
  const auto mode = in.Get<uint8_t>();
  std::string file = in.Rest();
  if (mode & 1) {
    uint32_t version = 0;
    if (file.size() >= 8 + sizeof(version)) std::memcpy(&version, file.data() + 8, sizeof(version));
    ckpt::StreamingChecksum sum(version >= 3 ? ckpt::ChecksumAlgorithm::kXxh3_64 : ckpt::ChecksumAlgorithm::kFnv1a64);
    sum.Update(std::as_bytes(std::span<const char>(file.data(), file.size())));
    const uint64_t hash = sum.Value();
    file.append(reinterpret_cast<const char*>(&hash), sizeof(hash));
  }
  const absl::StatusOr<ckpt::WeightsFile> weights = ckpt::LoadWeights(fuzz::WriteScratchFile("weights.bin", file));
  if (!weights.ok()) return 0;
  GRADSYNC_FUZZ_CHECK(static_cast<int64_t>(weights->values.size()) == weights->layout.total_numel(), "value count");
  const std::string again_path = fuzz::ScratchDir() + "/saved.bin";
  const absl::Status saved = ckpt::SaveWeights(again_path, weights->model, weights->layout, weights->values);
  GRADSYNC_FUZZ_CHECK(saved.ok(), saved.ToString());
  const absl::StatusOr<ckpt::WeightsFile> again = ckpt::LoadWeights(again_path);
  GRADSYNC_FUZZ_CHECK(again.ok(), again.status().ToString());
  // Bitwise, so that NaN values (which the file may hold) compare equal to themselves.
  const bool same_values = again->values.size() == weights->values.size() &&
                           (weights->values.empty() || std::memcmp(again->values.data(), weights->values.data(),
                                                                   weights->values.size() * sizeof(float)) == 0);
  GRADSYNC_FUZZ_CHECK(same_values && again->layout.Hash() == weights->layout.Hash(), "weights read back differ");
  return 0;
}
