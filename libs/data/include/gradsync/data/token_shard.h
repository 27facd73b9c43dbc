// Token shards in llm.c's .bin format, so data prepared by llm.c's scripts loads as is:
//   header: 256 x int32, [0] = 20240520 (magic), [1] = 1 (version), [2] = token count
//   body:   token count x uint16
// And the byte-level tokenizer: one token per byte of UTF-8 text (vocabulary 256).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::data {

inline constexpr int32_t kShardMagic = 20240520;
inline constexpr int32_t kShardVersion = 1;
inline constexpr int kShardHeaderInts = 256;
inline constexpr int kByteVocab = 256;

// The most bytes one token file (a shard or a text file) may hold: 1 GiB, five times one of
// llm.c's FineWeb shards (100M tokens). A larger file is refused before it is read.
inline constexpr int64_t kMaxDataFileBytes = int64_t{1} << 30;

// Reads a whole shard, a regular file of at most kMaxDataFileBytes. Every error is
// INVALID_ARGUMENT (NOT_FOUND when it cannot be opened) and names the file and the problem, never
// what the file holds: not a regular file, too large, wrong magic, unsupported version, truncated
// (fewer tokens than the header says), trailing bytes, no tokens, or a token >= `vocab_size`.
absl::StatusOr<std::vector<uint16_t>> ReadShard(const std::string& path, int vocab_size);

// Writes a shard atomically (temporary file, fsync, rename). INVALID_ARGUMENT for more tokens
// than the header's int32 count holds; INTERNAL naming the file on I/O errors.
absl::Status WriteShard(const std::string& path, std::span<const uint16_t> tokens);

// One file WriteShards wrote.
struct ShardFile {
  std::string path;
  int64_t tokens = 0;
};

// Splits `tokens` into the fewest shards of at most `shard_tokens` (> 0) tokens, all of equal
// size within one token (no short remainder), in order, written as
// `dir`/`prefix`_000000.bin, `prefix`_000001.bin, ... (llm.c's names); `dir` must exist.
// INVALID_ARGUMENT if `tokens` is empty or `shard_tokens` is not positive; WriteShard's errors.
absl::StatusOr<std::vector<ShardFile>> WriteShards(const std::string& dir, const std::string& prefix,
                                                   std::span<const uint16_t> tokens, int64_t shard_tokens);

// The largest vocabulary a shard's uint16 tokens can hold.
inline constexpr int kMaxShardVocab = 65536;

// The bytes of a text file. INVALID_ARGUMENT naming the file if it is not a regular file, is
// larger than kMaxDataFileBytes or is empty; NOT_FOUND when it cannot be opened.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// The bytes of a text file as tokens. INVALID_ARGUMENT naming the file if it is not a regular
// file, is larger than kMaxDataFileBytes or is empty; NOT_FOUND when it cannot be opened.
absl::StatusOr<std::vector<uint16_t>> ReadTextTokens(const std::string& path);

// Expands each path (a file, or a glob such as "data/train_*.bin") in order; INVALID_ARGUMENT
// naming a pattern that matches nothing.
absl::StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns);

}  // namespace gradsync::data
