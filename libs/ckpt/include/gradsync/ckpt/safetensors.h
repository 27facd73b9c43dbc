// safetensors files (Hugging Face's weights format), read and written with fp32 values.
//
// Layout: u64 N (little-endian) | N bytes of JSON | data. The JSON is one object: per tensor
// "name": {"dtype": "F32", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, offsets in
// bytes from the start of the data, plus an optional "__metadata__": {string: string}. Values are
// raw little-endian, row-major. The writer stores F32 tensors back to back in the order given and
// pads the header with spaces to a multiple of 8 bytes, so the data is aligned.
//
// The reader is strict, so that a file is either wholly understood or refused: the header fits in
// the file and in kMaxSafetensorsHeader; every tensor's dtype is F32, BF16 or F16 (converted to
// fp32 exactly), its shape has non-negative dimensions, its byte count is numel x dtype size, and
// the tensors, ordered by offset, tile the data from 0 to its end without gap or overlap. Errors
// are DATA_LOSS naming the path and the tensor ("model.safetensors: tensor \"h.0.attn.c_attn.weight\":
// ..."); they never quote values. Any thread may call these functions.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::ckpt {

// The largest JSON header read (Hugging Face's reader has the same limit).
inline constexpr uint64_t kMaxSafetensorsHeader = 100 << 20;

// One named tensor with its values in fp32, row-major.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct SafetensorsFile {
  std::vector<NamedTensor> tensors;  // in data order
  std::map<std::string, std::string> metadata;
};

// Writes `tensors` as F32 to `path` atomically (temporary file, fsync, rename). INVALID_ARGUMENT
// when a tensor's values do not match its shape, a name repeats or is "__metadata__"; I/O errors
// name the path.
absl::Status WriteSafetensors(const std::string& path, std::span<const NamedTensor> tensors,
                              const std::map<std::string, std::string>& metadata);

// Reads and checks a whole file (see above). NOT_FOUND when it is missing; FAILED_PRECONDITION
// when it is not a regular file.
absl::StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path);

// The same checks on bytes already in memory; `source` names them in errors.
absl::StatusOr<SafetensorsFile> ParseSafetensors(std::string_view bytes, const std::string& source);

}  // namespace gradsync::ckpt
