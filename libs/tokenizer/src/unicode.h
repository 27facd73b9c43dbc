// Unicode for the pre-tokenizers: the classes their patterns test. UTF-8 itself is read by libs/core
// (gradsync/core/utf8.h).
#pragma once

namespace gradsync::tokenizer::unicode {

bool IsLetter(char32_t c);      // General_Category L
bool IsNumber(char32_t c);      // General_Category N
bool IsWhiteSpace(char32_t c);  // the White_Space property

}  // namespace gradsync::tokenizer::unicode
