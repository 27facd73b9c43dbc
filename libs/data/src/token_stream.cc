#include "gradsync/data/token_stream.h"

#include <algorithm>

namespace gradsync::data {

TokenStream TokenStream::OfWidth(std::span<const uint32_t> tokens, TokenWidth width) {
  if (width == TokenWidth::kUint32) return TokenStream(std::vector<uint32_t>(tokens.begin(), tokens.end()));
  std::vector<uint16_t> narrow(tokens.size());
  std::transform(tokens.begin(), tokens.end(), narrow.begin(), [](uint32_t t) { return static_cast<uint16_t>(t); });
  return TokenStream(std::move(narrow));
}

int64_t TokenStream::size() const {
  return std::visit([](const auto& v) { return static_cast<int64_t>(v.size()); }, tokens_);
}

TokenWidth TokenStream::width() const {
  return std::holds_alternative<std::vector<uint16_t>>(tokens_) ? TokenWidth::kUint16 : TokenWidth::kUint32;
}

uint32_t TokenStream::operator[](int64_t i) const {
  return std::visit([i](const auto& v) { return static_cast<uint32_t>(v[static_cast<size_t>(i)]); }, tokens_);
}

void TokenStream::CopyTo(int64_t first, int64_t count, int32_t* out) const {
  std::visit(
      [&](const auto& v) {
        const auto* src = v.data() + first;
        std::transform(src, src + count, out, [](auto t) { return static_cast<int32_t>(t); });
      },
      tokens_);
}

std::vector<uint32_t> TokenStream::ToVector() const {
  return std::visit([](const auto& v) { return std::vector<uint32_t>(v.begin(), v.end()); }, tokens_);
}

TokenStream TokenStream::Slice(int64_t first, int64_t count) const {
  return std::visit(
      [&](const auto& v) {
        using Vector = std::decay_t<decltype(v)>;
        return TokenStream(Vector(v.begin() + first, v.begin() + first + count));
      },
      tokens_);
}

}  // namespace gradsync::data
