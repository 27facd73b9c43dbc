#include "byte_level.h"

#include <array>

#include "gradsync/core/utf8.h"
#include "unicode.h"

namespace gradsync::tokenizer {
namespace {

bool StandsForItself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Alphabet {
  std::array<char32_t, 256> code_point{};
  // Inverse over U+0000..U+0143, the only code points the alphabet uses; -1 outside it.
  std::array<int, 0x144> byte{};

  Alphabet() {
    byte.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      code_point[b] = StandsForItself(b) ? static_cast<char32_t>(b) : next++;
      byte[code_point[b]] = b;
    }
  }
};

const Alphabet& TheAlphabet() {
  static const Alphabet alphabet;
  return alphabet;
}

}  // namespace

char32_t ByteToCodePoint(uint8_t b) { return TheAlphabet().code_point[b]; }

std::string ToByteLevel(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::Append(ByteToCodePoint(static_cast<uint8_t>(c)), &out);
  return out;
}

std::optional<std::string> FromByteLevel(std::string_view token) {
  const Alphabet& alphabet = TheAlphabet();
  std::string out;
  for (size_t pos = 0; pos < token.size();) {
    const utf8::DecodedChar c = utf8::Decode(token, pos);
    if (!c.valid || c.code_point >= alphabet.byte.size() || alphabet.byte[c.code_point] < 0) return std::nullopt;
    out.push_back(static_cast<char>(alphabet.byte[c.code_point]));
    pos += static_cast<size_t>(c.length);
  }
  return out;
}

}  // namespace gradsync::tokenizer
