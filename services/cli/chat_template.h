// The chat template `gradsync data prepare --chat` applies: ChatML, the form MiniMind and Qwen
// write (and the one a tokenizer_config.json's chat_template is taken for when it uses ChatML's
// markers):
//
//   <|im_start|>{role}\n{content}<|im_end|>\n     for every turn, in order
//
// The loss covers what the model is to learn to say: each assistant turn's content and the
// "<|im_end|>\n" that closes it (MiniMind's SFT loss mask); the prompts, the roles and the
// "<|im_start|>assistant\n" before a reply are context only.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "documents.h"

namespace gradsync::cli {

// A piece of rendered text and whether its tokens are targets of the loss.
struct ChatSegment {
  std::string text;
  bool loss = false;
};

// The conversation in ChatML, as segments whose concatenation is the rendered text.
std::vector<ChatSegment> RenderChatMl(const Conversation& conversation);

// What --chat-template names: "chatml", or "tokenizer" for the tokenizer_config.json beside the
// tokenizer (taken when its chat_template uses <|im_start|> and <|im_end|>). INVALID_ARGUMENT
// naming --chat-template for another name, a missing file or field, or a template of another form.
absl::Status CheckChatTemplate(const std::string& name, const std::string& tokenizer_path);

}  // namespace gradsync::cli
