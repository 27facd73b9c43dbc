// The names of a checkpoint's directory and files, which the coordinator checks reports against:
// the same for native parts and for a script's (the Python package's gradsync.torch.save).
#pragma once

#include <cstdint>
#include <string>

namespace gradsync::ckpt {

inline constexpr char kManifestFile[] = "MANIFEST.json";

// "<root>/step-%09d": the directory of the checkpoint taken after `step` optimizer steps.
std::string CheckpointDir(const std::string& root, int64_t step);

// "rank-%05d.bin".
std::string PartFileName(int32_t rank);

}  // namespace gradsync::ckpt
