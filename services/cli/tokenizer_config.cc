#include "tokenizer_config.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/bounded_file.h"
#include "gradsync/core/json_depth.h"

namespace gradsync::cli {
namespace {

constexpr int64_t kMaxConfigBytes = 16 << 20;

std::string TokenText(const google::protobuf::Struct& config, const std::string& name) {
  auto it = config.fields().find(name);
  if (it == config.fields().end()) return "";
  if (it->second.has_string_value()) return it->second.string_value();
  if (it->second.has_struct_value()) {
    auto content = it->second.struct_value().fields().find("content");
    if (content != it->second.struct_value().fields().end()) return content->second.string_value();
  }
  return "";
}

}  // namespace

absl::StatusOr<TokenizerConfig> ReadTokenizerConfig(const std::string& tokenizer_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::is_directory(tokenizer_path, ec) ? fs::path(tokenizer_path) : fs::path(tokenizer_path).parent_path();
  TokenizerConfig out;
  out.path = (dir / "tokenizer_config.json").string();
  if (!fs::exists(out.path, ec)) return absl::NotFoundError(absl::StrCat("no ", out.path));
  absl::StatusOr<std::string> text = ReadBoundedFile(out.path, kMaxConfigBytes, "a tokenizer_config.json");
  if (!text.ok()) return text.status();
  if (absl::Status deep = CheckJsonDepth(*text, out.path); !deep.ok()) return absl::InvalidArgumentError(deep.message());
  google::protobuf::Struct config;
  if (!google::protobuf::util::JsonStringToMessage(*text, &config).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(out.path, ": not a JSON object"));
  }
  out.bos_token = TokenText(config, "bos_token");
  out.eos_token = TokenText(config, "eos_token");
  auto chat = config.fields().find("chat_template");
  if (chat != config.fields().end()) out.chat_template = chat->second.string_value();
  return out;
}

}  // namespace gradsync::cli
