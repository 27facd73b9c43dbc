// Token shards in llm.c's .bin format, so data prepared by llm.c's scripts loads as is:
//   header: 256 x int32, [0] = magic, [1] = version, [2] = token count
//   body:   token count x uint16 (magic 20240520, version 1: GPT-2's tokens)
//        or token count x uint32 (magic 20240801, version 7: llm.c's Llama 3 shards)
// The magic says the width; `gradsync data prepare` writes uint16 when the vocabulary fits.
// And the byte-level tokenizer: one token per byte of UTF-8 text (vocabulary 256).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/data/token_stream.h"

namespace gradsync::data {

// One of the two shard layouts.
struct ShardFormat {
  int32_t magic;
  int32_t version;
  TokenWidth width;
};
inline constexpr ShardFormat kUint16Shard{20240520, 1, TokenWidth::kUint16};
inline constexpr ShardFormat kUint32Shard{20240801, 7, TokenWidth::kUint32};
inline constexpr int kShardHeaderInts = 256;
inline constexpr int kByteVocab = 256;

// The most bytes one token file (a shard or a text file) may hold: 1 GiB, five times one of
// llm.c's FineWeb shards (100M tokens). A larger file is refused before it is read.
inline constexpr int64_t kMaxDataFileBytes = int64_t{1} << 30;

// Reads a whole shard, a regular file of at most kMaxDataFileBytes. Every error is
// INVALID_ARGUMENT (NOT_FOUND when it cannot be opened) and names the file and the problem, never
// what the file holds: not a regular file, too large, wrong magic, unsupported version, truncated
// (fewer tokens than the header says), trailing bytes, no tokens, or a token >= `vocab_size`.
// The tokens stay at the file's width.
absl::StatusOr<TokenStream> ReadShard(const std::string& path, int vocab_size);

// Writes a shard atomically (temporary file, fsync, rename), uint16 tokens as kUint16Shard and
// uint32 as kUint32Shard. INVALID_ARGUMENT for more tokens than the header's int32 count holds;
// INTERNAL naming the file on I/O errors.
absl::Status WriteShard(const std::string& path, std::span<const uint16_t> tokens);
absl::Status WriteShard(const std::string& path, std::span<const uint32_t> tokens);

// One file WriteShards wrote.
struct ShardFile {
  std::string path;
  int64_t tokens = 0;
};

// Splits `tokens` into the fewest shards of at most `shard_tokens` (> 0) tokens, all of equal
// size within one token (no short remainder), in order, written as
// `dir`/`prefix`_000000.bin, `prefix`_000001.bin, ... (llm.c's names) at the stream's width;
// `dir` must exist. INVALID_ARGUMENT if `tokens` is empty or `shard_tokens` is not positive;
// WriteShard's errors.
absl::StatusOr<std::vector<ShardFile>> WriteShards(const std::string& dir, const std::string& prefix,
                                                   const TokenStream& tokens, int64_t shard_tokens);

// The bytes of a text file. INVALID_ARGUMENT naming the file if it is not a regular file, is
// larger than kMaxDataFileBytes or is empty; NOT_FOUND when it cannot be opened.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// The bytes of a text file as (uint16) tokens. INVALID_ARGUMENT naming the file if it is not a regular
// file, is larger than kMaxDataFileBytes or is empty; NOT_FOUND when it cannot be opened.
absl::StatusOr<TokenStream> ReadTextTokens(const std::string& path);

// Expands each path (a file, or a glob such as "data/train_*.bin") in order; INVALID_ARGUMENT
// naming a pattern that matches nothing.
absl::StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns);

}  // namespace gradsync::data
