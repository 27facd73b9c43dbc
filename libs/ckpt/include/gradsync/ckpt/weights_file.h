// The final-weights file: every parameter's name, shape and fp32 values, with a checksum.
//
// Layout (little-endian):
//   "GSWEIGHT" | u32 version (3) | u32 param count | u64 total elements | u64 layout hash
//   u32 model length | serialized gradsync.v1.ModelSpec (the resolved network, so the file alone
//   rebuilds the model)
//   per parameter: u32 name length | name | u32 rank | i64 dims[rank]
//   f32 values[total elements], parameters in layout order
//   u64 XXH3-64 of every byte before it (checksum.h)
// Version 2 files (the same with an FNV-1a trailer) still load.
// Written to a temporary file, fsynced and renamed, so a reader never sees half a file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::ckpt {

struct WeightsFile {
  v1::ModelSpec model;
  nn::ParamLayout layout;
  std::vector<float> values;
};

// Creates parent directories as needed. INTERNAL/PERMISSION_DENIED with the path on I/O errors.
absl::Status SaveWeights(const std::string& path, const v1::ModelSpec& model, const nn::ParamLayout& layout,
                         std::span<const float> values);

// DATA_LOSS naming the path and the problem for a truncated, corrupt or foreign file.
absl::StatusOr<WeightsFile> LoadWeights(const std::string& path);

}  // namespace gradsync::ckpt
