// Byte-level BPE: a piece's bytes start as one token each and the adjacent pair of lowest merge
// rank is merged, every occurrence from left to right, until no pair has a rank (GPT-2's bpe(),
// which Hugging Face's BPE model and tiktoken reproduce).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gradsync::tokenizer {

class BpeModel {
 public:
  // Where vocabulary and merges came from, for errors: e.g. {"encoder.json", "vocab.bpe"} or
  // {"model.vocab", "model.merges"}.
  struct Origin {
    std::string vocab;
    std::string merges;
  };

  // `vocab` maps byte-level token strings to ids; `merges` are pairs of such strings in rank
  // order. With `ignore_merges`, a piece that is a token as a whole is that token (Llama-3).
  // INVALID_ARGUMENT naming the origin when a byte has no token of its own, or a merge names a
  // token (or makes one) the vocabulary lacks, naming the merge's index.
  static absl::StatusOr<std::unique_ptr<BpeModel>> Create(
      const std::vector<std::pair<std::string, int32_t>>& vocab,
      const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges, const Origin& origin);

  // Appends the ids of one pre-tokenized piece (raw bytes). Thread-safe.
  void EncodePiece(std::string_view piece, std::vector<int32_t>* ids) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  std::vector<int32_t> Merged(std::string_view piece) const;

  int32_t byte_ids_[256] = {};
  absl::flat_hash_map<uint64_t, Merge> merges_;
  bool ignore_merges_ = false;
  absl::flat_hash_map<std::string, int32_t> whole_;  // raw bytes -> id, for ignore_merges

  // Pieces recur (words, runs of spaces): their ids are kept, up to kMaxCached pieces of up to
  // kMaxCachedBytes each, and the cache starts over when full.
  static constexpr size_t kMaxCached = size_t{1} << 17;
  static constexpr size_t kMaxCachedBytes = 256;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync::tokenizer
