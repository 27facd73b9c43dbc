// What `gradsync export --format hf` adds beside the weights so that the directory loads as is with
// Hugging Face's from_pretrained, model and tokenizer: the tokenizer's files under the names
// transformers reads, its bos/eos ids in config.json and generation_config.json, and, for a llama,
// the context length to declare.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::cli {

struct HfPackage {
  std::string tokenizer;                  // what --tokenizer or the shards named; "" for none
  std::optional<int64_t> max_positions;   // llama's max_position_embeddings; the seqLen when unset
};

// The tokenizer the shards in `dir` were prepared with (their shards.json), or "" when they were
// prepared as bytes. NOT_FOUND when `dir` has no shards.json.
absl::StatusOr<std::string> TokenizerOfShards(const std::string& dir);

// Completes the export in `out` (config.json and model.safetensors written already): copies the
// tokenizer's files (a tokenizer.json with its tokenizer_config.json and special_tokens_map.json;
// GPT-2's encoder.json and vocab.bpe as vocab.json and merges.txt with a tokenizer_config.json; a
// SentencePiece model as tokenizer.model), puts bos_token_id and eos_token_id into config.json and
// writes generation_config.json, and sets a llama's max_position_embeddings. Returns what it wrote,
// for the command's summary. INVALID_ARGUMENT for a tokenizer whose vocabulary is not the model's,
// or max_positions for a gpt2 (its positions are learned: the seqLen is all it has) or below the
// seqLen.
absl::StatusOr<std::vector<std::string>> CompleteHfExport(const std::string& out, const HfPackage& package);

}  // namespace gradsync::cli
