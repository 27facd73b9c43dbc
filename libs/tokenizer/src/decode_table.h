// Ids back to bytes for byte-level vocabularies: each id's token spelled in GPT-2's byte-level
// alphabet becomes its bytes; a token with a character outside the alphabet (an added token
// such as "<｜begin▁of▁sentence｜>") stands for its own UTF-8, as Hugging Face's ByteLevel
// decoder has it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::tokenizer {

class DecodeTable {
 public:
  // Gives `id` (>= 0) the bytes `token` spells; a later Set of the same id replaces them.
  void Set(int32_t id, std::string_view token);

  // One more than the largest id set.
  int size() const { return static_cast<int>(bytes_.size()); }

  // The bytes of `ids` concatenated. INVALID_ARGUMENT naming the position of an id never set.
  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const;

 private:
  std::vector<std::optional<std::string>> bytes_;
};

}  // namespace gradsync::tokenizer
