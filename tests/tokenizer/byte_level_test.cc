// GPT-2's byte-level alphabet and the reading of UTF-8 the tokenizers share.
#include <gtest/gtest.h>

#include <string>

#include "byte_level.h"
#include "gradsync/core/utf8.h"
#include "unicode.h"

namespace gradsync::tokenizer {
namespace {

TEST(ByteLevel, MatchesGpt2BytesToUnicode) {
  EXPECT_EQ(ByteToCodePoint('a'), U'a');
  EXPECT_EQ(ByteToCodePoint('!'), U'!');
  EXPECT_EQ(ByteToCodePoint(0x00), char32_t{0x100});
  EXPECT_EQ(ByteToCodePoint('\n'), char32_t{0x10A});  // "Ċ"
  EXPECT_EQ(ByteToCodePoint(' '), char32_t{0x120});   // "Ġ"
  EXPECT_EQ(ByteToCodePoint(0xAD), char32_t{0x143});  // the last of the 68 moved bytes
  EXPECT_EQ(ToByteLevel(" hi\n"), "\xC4\xA0hi\xC4\x8A");
}

TEST(ByteLevel, EveryByteComesBack) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(FromByteLevel(ToByteLevel(all)), all);
}

TEST(ByteLevel, RefusesCharactersOutsideTheAlphabet) {
  EXPECT_EQ(FromByteLevel("<|endoftext|>"), "<|endoftext|>");
  EXPECT_FALSE(FromByteLevel(" x").has_value());             // a space is spelt U+0120
  EXPECT_FALSE(FromByteLevel("\xE2\x96\x81x").has_value());  // SentencePiece's U+2581
}

// Maximal subparts, as the WHATWG decoder (and so JavaScript's TextDecoder) reads them.
TEST(Utf8, IllFormedSequencesReadAsReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(utf8::ToValid("a\x80z"), "a" + fffd + "z");
  EXPECT_EQ(utf8::ToValid("a\xE2\x82z"), "a" + fffd + "z");                 // truncated: one
  EXPECT_EQ(utf8::ToValid("a\xF0\x9F\x98z"), "a" + fffd + "z");             // truncated: one
  EXPECT_EQ(utf8::ToValid("a\xC0\xAFz"), "a" + fffd + fffd + "z");          // overlong: two
  EXPECT_EQ(utf8::ToValid("\xED\xA0\x80"), fffd + fffd + fffd);             // surrogate: three
  EXPECT_EQ(utf8::ToValid("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // > U+10FFFF
  EXPECT_EQ(utf8::ToValid("end\xE2\x82"), "end" + fffd);
  const std::string valid = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" + fffd;
  EXPECT_EQ(utf8::ToValid(valid), valid);
}

TEST(Unicode, Classes) {
  EXPECT_TRUE(unicode::IsLetter(U'é'));
  EXPECT_TRUE(unicode::IsLetter(U'語'));
  EXPECT_TRUE(unicode::IsLetter(char32_t{0x02B0}));   // a modifier letter (Lm)
  EXPECT_FALSE(unicode::IsLetter(char32_t{0x0301}));  // a combining mark (Mn) is not
  EXPECT_TRUE(unicode::IsNumber(char32_t{0x0663}));   // Arabic-Indic three (Nd)
  EXPECT_TRUE(unicode::IsNumber(char32_t{0x216B}));   // Roman numeral twelve (Nl)
  EXPECT_TRUE(unicode::IsNumber(char32_t{0x00BD}));   // one half (No)
  EXPECT_FALSE(unicode::IsNumber(U'x'));
  EXPECT_TRUE(unicode::IsWhiteSpace(char32_t{0x0085}));   // White_Space, though not JavaScript's \s
  EXPECT_FALSE(unicode::IsWhiteSpace(char32_t{0xFEFF}));  // JavaScript's \s, though not White_Space
  EXPECT_TRUE(unicode::IsWhiteSpace(char32_t{0x3000}));
  EXPECT_FALSE(unicode::IsWhiteSpace(char32_t{0x200B}));  // zero width space is not
}

}  // namespace
}  // namespace gradsync::tokenizer
