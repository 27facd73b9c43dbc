#include "gradsync/ckpt/names.h"

#include "absl/strings/str_format.h"

namespace gradsync::ckpt {

std::string CheckpointDir(const std::string& root, int64_t step) { return absl::StrFormat("%s/step-%09d", root, step); }

std::string PartFileName(int32_t rank) { return absl::StrFormat("rank-%05d.bin", rank); }

}  // namespace gradsync::ckpt
