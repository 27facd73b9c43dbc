// GPT-2's byte-level alphabet (its bytes_to_unicode): every byte stands for one printable code
// point, so a vocabulary of strings can hold any byte sequence. Printable Latin-1 bytes stand for
// themselves; the other 68 bytes (controls, space, 0x7F-0xA0, 0xAD) for U+0100 onwards, in order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gradsync::tokenizer {

// The code point byte `b` stands for.
char32_t ByteToCodePoint(uint8_t b);

// The byte-level spelling (UTF-8) of `bytes`: one code point per byte.
std::string ToByteLevel(std::string_view bytes);

// The bytes a byte-level token spells; nullopt when a character of `token` is not in the
// alphabet (added tokens such as "<|endoftext|>" are in it; most non-ASCII text is not).
std::optional<std::string> FromByteLevel(std::string_view token);

}  // namespace gradsync::tokenizer
