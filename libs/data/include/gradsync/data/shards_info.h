// What tokenized a directory of shards: `gradsync data prepare` writes DIR/shards.json beside
// the train_*.bin and val_*.bin it writes, and a job that reads shards from DIR checks the
// model's vocabulary against it. Shards from elsewhere (llm.c's scripts) have no such file and
// are checked token by token only (ReadShard).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::data {

inline constexpr char kShardsInfoFile[] = "shards.json";

// The tokenizer of the shards, as shards.json records it:
//   {"tokenizer": {"kind": "gpt2-bpe", "path": "/abs/path", "vocabSize": 50257}}
// and, for samples packed into windows (`data prepare --chat`), "packedSeqLen": T: every sample
// lies within one window of a model whose seqLen is T, and only there.
struct ShardsInfo {
  std::string tokenizer_kind;  // tokenizer::KindName
  std::string tokenizer_path;  // absolute; empty for bytes
  int vocab_size = 0;
  int packed_seq_len = 0;  // 0: a stream of tokens, any seqLen
};

// Writes `dir`/shards.json atomically. INTERNAL naming the file on I/O errors.
absl::Status WriteShardsInfo(const std::string& dir, const ShardsInfo& info);

// `dir`/shards.json, or nullopt when there is none. INVALID_ARGUMENT naming the file when it
// cannot be read as one (never quoting it).
absl::StatusOr<std::optional<ShardsInfo>> ReadShardsInfo(const std::string& dir);

// OK unless the directory of `shard_path` has a shards.json whose vocabulary is not
// `model_vocab_size` (INVALID_ARGUMENT naming the file, the tokenizer and both sizes), or whose
// samples are packed for another seqLen than `model_seq_len` (INVALID_ARGUMENT naming both: its
// windows would cut samples apart).
absl::Status CheckShardsFor(const std::string& shard_path, int model_vocab_size, int model_seq_len);

}  // namespace gradsync::data
