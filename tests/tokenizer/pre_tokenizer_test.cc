// The split patterns, matched by hand: pieces as a backtracking regex engine cuts them.
#include "pre_tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gradsync::tokenizer {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Pieces(std::string_view text, SplitPattern pattern) {
  std::vector<std::string> out;
  for (std::string_view piece : SplitText(text, pattern)) out.emplace_back(piece);
  return out;
}

TEST(Gpt2Split, WordsNumbersPunctuationAndContractions) {
  EXPECT_THAT(Pieces("Hello world's 123 ok!?", SplitPattern::kGpt2),
              ElementsAre("Hello", " world", "'s", " 123", " ok", "!?"));
  // Case-sensitive contractions: "'S" is punctuation, then a letter.
  EXPECT_THAT(Pieces("IT'S", SplitPattern::kGpt2), ElementsAre("IT", "'", "S"));
  EXPECT_THAT(Pieces("a1b", SplitPattern::kGpt2), ElementsAre("a", "1", "b"));
}

TEST(Gpt2Split, WhitespaceRunsLeaveTheirLastSpaceToTheNextWord) {
  EXPECT_THAT(Pieces("a   b", SplitPattern::kGpt2), ElementsAre("a", "  ", " b"));
  EXPECT_THAT(Pieces("a\n\nb", SplitPattern::kGpt2), ElementsAre("a", "\n", "\n", "b"));
  EXPECT_THAT(Pieces("a\tb", SplitPattern::kGpt2), ElementsAre("a", "\t", "b"));
  EXPECT_THAT(Pieces("end  ", SplitPattern::kGpt2), ElementsAre("end", "  "));
  // U+3000 is a space: the run " \u3000" gives its last character back, which is not ' '.
  EXPECT_THAT(Pieces("x \xE3\x80\x80y", SplitPattern::kGpt2), ElementsAre("x", " ", "\xE3\x80\x80", "y"));
}

TEST(Gpt2Split, NonAsciiClasses) {
  EXPECT_THAT(Pieces("na\xC3\xAFve \xD9\xA3\xD9\xA4", SplitPattern::kGpt2),
              ElementsAre("na\xC3\xAFve", " \xD9\xA3\xD9\xA4"));  // "naïve ٣٤"
  EXPECT_THAT(Pieces("a\xF0\x9F\x98\x80!b", SplitPattern::kGpt2), ElementsAre("a", "\xF0\x9F\x98\x80!", "b"));
}

TEST(Llama3Split, DigitsInThreesAndFoldedContractions) {
  EXPECT_THAT(Pieces("12345", SplitPattern::kLlama3), ElementsAre("123", "45"));
  EXPECT_THAT(Pieces("12345", SplitPattern::kQwen2), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(Pieces("IT'S", SplitPattern::kLlama3), ElementsAre("IT", "'S"));
}

TEST(Llama3Split, PunctuationOrTabJoinsTheNextWordAndNewlinesEndRuns) {
  EXPECT_THAT(Pieces("\tword,(x)", SplitPattern::kLlama3), ElementsAre("\tword", ",(", "x", ")"));
  EXPECT_THAT(Pieces("a.\n\nb", SplitPattern::kLlama3), ElementsAre("a", ".\n\n", "b"));
  EXPECT_THAT(Pieces("a \n  b", SplitPattern::kLlama3), ElementsAre("a", " \n", " ", " b"));
  EXPECT_THAT(Pieces("x  ", SplitPattern::kLlama3), ElementsAre("x", "  "));
}

TEST(RecognizePattern, KnowsTheFilesSpellingsOnly) {
  EXPECT_EQ(RecognizePattern(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"),
            SplitPattern::kGpt2);
  EXPECT_EQ(RecognizePattern(R"(\p{N}{1,3})"), std::nullopt);
}

}  // namespace
}  // namespace gradsync::tokenizer
