// A small Hugging Face tokenizer.json written by tests: byte-level BPE over all 256 bytes.
#pragma once

#include <string>

namespace gradsync::testing {

// GPT-2's byte-level spelling of byte b, escaped for a JSON string.
std::string ByteLevelJson(int b);

// A byte-level tokenizer.json: the 256 bytes at their own ids, the merges "he" (256) and "ll"
// (257), and the special token "<|end|>" at `added_id`; a vocabulary of added_id + 1 ids.
std::string TokenizerJson(int added_id);

}  // namespace gradsync::testing
