// The part of a Hugging Face tokenizer_config.json that preparing data reads: the beginning- and
// end-of-text tokens and the chat template.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gradsync::cli {

struct TokenizerConfig {
  std::string path;           // the file read
  std::string bos_token;      // "" when not given
  std::string eos_token;
  std::string chat_template;  // the Jinja text, as is
};

// The tokenizer_config.json beside the tokenizer at `tokenizer_path` (in it, for a directory).
// NOT_FOUND naming the file when there is none; INVALID_ARGUMENT naming it when it is not a JSON
// object or nests deeper than 64. A token given as {"content": "..."} is read too.
absl::StatusOr<TokenizerConfig> ReadTokenizerConfig(const std::string& tokenizer_path);

}  // namespace gradsync::cli
