#include "chat_template.h"


#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tokenizer_config.h"

namespace gradsync::cli {

std::vector<ChatSegment> RenderChatMl(const Conversation& conversation) {
  std::vector<ChatSegment> out;
  for (const Turn& turn : conversation) {
    if (turn.role != "assistant") {
      out.push_back({absl::StrCat("<|im_start|>", turn.role, "\n", turn.content, "<|im_end|>\n"), false});
      continue;
    }
    out.push_back({"<|im_start|>assistant\n", false});
    out.push_back({absl::StrCat(turn.content, "<|im_end|>\n"), true});
  }
  return out;
}

absl::Status CheckChatTemplate(const std::string& name, const std::string& tokenizer_path) {
  if (name == "chatml") return absl::OkStatus();
  if (name != "tokenizer") {
    return absl::InvalidArgumentError(
        absl::StrCat("--chat-template: must be chatml or tokenizer, got \"", name, "\""));
  }
  absl::StatusOr<TokenizerConfig> config = ReadTokenizerConfig(tokenizer_path);
  if (!config.ok()) return absl::InvalidArgumentError(absl::StrCat("--chat-template: ", config.status().message()));
  if (config->chat_template.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--chat-template: ", config->path, " has no chat_template"));
  }
  if (!absl::StrContains(config->chat_template, "<|im_start|>") ||
      !absl::StrContains(config->chat_template, "<|im_end|>")) {
    return absl::InvalidArgumentError(absl::StrCat("--chat-template: the chat_template of ", config->path,
                                                   " is not ChatML (no <|im_start|> and <|im_end|>), the only form "
                                                   "read; --chat-template chatml applies ChatML anyway"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::cli
