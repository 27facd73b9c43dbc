// What gradsync reads from a Hugging Face tokenizer.json, and the checks that refuse the rest.
//
// Read: no normalizer (null, or an empty Sequence); a pre-tokenizer that is ByteLevel, or a
// Sequence of at most one Split with a known pattern (pre_tokenizer.h) and behavior Isolated,
// then ByteLevel; a BPE model (vocab, merges as "A B" strings or [A, B] pairs, ignore_merges)
// without dropout, byte fallback, or subword prefixes and suffixes; added tokens (lstrip and
// rstrip honoured, single_word refused); a ByteLevel decoder. The post-processor (templates that
// add BOS/EOS) is ignored: Encode gives a text's ids alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "added_tokens.h"
#include "google/protobuf/struct.pb.h"
#include "pre_tokenizer.h"

namespace gradsync::tokenizer {

struct HfConfig {
  bool add_prefix_space = false;      // ByteLevel's: " " before text that lacks one
  std::optional<SplitPattern> split;  // none: each text segment is one piece
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  bool ignore_merges = false;
  std::vector<AddedToken> added_tokens;
};

// The configuration `json` (the parsed file `path`) describes. INVALID_ARGUMENT naming `path`
// and the JSON field for anything missing, malformed or not supported, e.g.
// `tokenizer.json: normalizer.type: "NFC" is not supported`.
absl::StatusOr<HfConfig> ParseHfConfig(const google::protobuf::Value& json, const std::string& path);

}  // namespace gradsync::tokenizer
