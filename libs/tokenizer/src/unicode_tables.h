// Code point ranges of the Unicode classes the pre-tokenizers test, generated into
// unicode_tables.cc by ../tools/gen_unicode_tables.mjs.
#pragma once

#include <span>

namespace gradsync::tokenizer::unicode {

// An inclusive range of code points.
struct CodePointRange {
  char32_t first;
  char32_t last;
};

// Sorted, disjoint ranges.
std::span<const CodePointRange> LetterRanges();      // \p{L}
std::span<const CodePointRange> NumberRanges();      // \p{N}
std::span<const CodePointRange> WhiteSpaceRanges();  // White_Space
// The Unicode version the tables were generated from, e.g. "17.0".
const char* UnicodeVersion();

}  // namespace gradsync::tokenizer::unicode
