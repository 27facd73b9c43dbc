// One file's tokens, kept in memory at the width its shard stores them: uint16 for vocabularies
// of at most 65,536 ids (GPT-2's), uint32 for larger ones (Llama 3's 128,256, Qwen2's 151,936).
// A dataset of uint16 shards costs two bytes a token, as on disk, whatever other jobs need.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <variant>
#include <vector>

namespace gradsync::data {

// How many bytes a token takes in a shard, and so in memory.
enum class TokenWidth { kUint16, kUint32 };

// The largest vocabulary uint16 tokens hold.
inline constexpr int kMaxUint16Vocab = 65536;

// The narrowest width that holds every id of a vocabulary of `vocab_size`.
constexpr TokenWidth WidthForVocab(int64_t vocab_size) {
  return vocab_size <= kMaxUint16Vocab ? TokenWidth::kUint16 : TokenWidth::kUint32;
}

class TokenStream {
 public:
  TokenStream() = default;
  explicit TokenStream(std::vector<uint16_t> tokens) : tokens_(std::move(tokens)) {}
  explicit TokenStream(std::vector<uint32_t> tokens) : tokens_(std::move(tokens)) {}
  // `tokens` stored at `width`; with kUint16 every token must be below 65,536.
  static TokenStream OfWidth(std::span<const uint32_t> tokens, TokenWidth width);

  int64_t size() const;
  TokenWidth width() const;
  uint32_t operator[](int64_t i) const;
  // Tokens [first, first + count), which must lie within size(), into out[0 .. count). The ids a
  // shard may hold are below its vocabulary, an int, so they fit.
  void CopyTo(int64_t first, int64_t count, int32_t* out) const;
  // Every token, widened.
  std::vector<uint32_t> ToVector() const;
  // A copy of tokens [first, first + count), at this stream's width.
  TokenStream Slice(int64_t first, int64_t count) const;
  // Calls f with the stored vector (std::vector<uint16_t> or std::vector<uint32_t>).
  template <class F>
  decltype(auto) Visit(F&& f) const {
    return std::visit(std::forward<F>(f), tokens_);
  }

 private:
  std::variant<std::vector<uint16_t>, std::vector<uint32_t>> tokens_;
};

}  // namespace gradsync::data
