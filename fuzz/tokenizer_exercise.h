// What the tokenizer targets check of a tokenizer that loaded: `text` encodes into ids within its
// vocabulary, and they decode.
#pragma once

#include <string_view>

#include "fuzz_support.h"
#include "gradsync/tokenizer/tokenizer.h"

namespace gradsync::fuzz {

inline void ExerciseTokenizer(const tokenizer::Tokenizer& t, std::string_view text) {
  const absl::StatusOr<std::vector<int32_t>> ids = t.Encode(text);
  if (!ids.ok()) return;
  for (int32_t id : *ids) GRADSYNC_FUZZ_CHECK(id >= 0 && id < t.vocab_size(), "an id outside the vocabulary");
  const absl::StatusOr<std::string> decoded = t.Decode(*ids);
  GRADSYNC_FUZZ_CHECK(decoded.ok(), decoded.status().ToString());
}

}  // namespace gradsync::fuzz
