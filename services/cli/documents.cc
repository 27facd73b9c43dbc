#include "documents.h"

#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/json_depth.h"
#include "gradsync/data/token_shard.h"

namespace gradsync::cli {
namespace {

// Each non-empty line of a .jsonl file parsed as a JSON object, with its line number.
template <class F>
absl::Status ForEachObject(const std::string& path, F&& take) {
  absl::StatusOr<std::string> text = data::ReadTextFile(path);
  if (!text.ok()) return text.status();
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::string where = absl::StrCat(path, ":", line_number);
    const std::string json(line);
    if (absl::Status deep = CheckJsonDepth(json, where); !deep.ok()) return absl::InvalidArgumentError(deep.message());
    google::protobuf::Struct object;
    if (!google::protobuf::util::JsonStringToMessage(json, &object).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": not a JSON object (a .jsonl file holds one a line)"));
    }
    if (absl::Status s = take(object, where); !s.ok()) return s;
  }
  return absl::OkStatus();
}

const google::protobuf::Value* FieldOf(const google::protobuf::Struct& object, const std::string& name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

}  // namespace

bool IsJsonLines(const std::string& path) { return absl::EndsWith(path, ".jsonl"); }

absl::StatusOr<std::vector<std::string>> ReadDocuments(const std::string& path, const std::string& field) {
  std::vector<std::string> documents;
  if (!IsJsonLines(path)) {
    absl::StatusOr<std::string> text = data::ReadTextFile(path);
    if (!text.ok()) return text.status();
    documents.push_back(*std::move(text));
    return documents;
  }
  absl::Status s = ForEachObject(path, [&](const google::protobuf::Struct& object, const std::string& where) {
    const google::protobuf::Value* value = FieldOf(object, field);
    if (value == nullptr || !value->has_string_value()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": no string field \"", field, "\" (--jsonl-field)"));
    }
    documents.push_back(value->string_value());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return documents;
}

absl::StatusOr<std::vector<Conversation>> ReadConversations(const std::string& path) {
  std::vector<Conversation> conversations;
  absl::Status s = ForEachObject(path, [&](const google::protobuf::Struct& object, const std::string& where) {
    const google::protobuf::Value* turns = FieldOf(object, "conversations");
    if (turns == nullptr || !turns->has_list_value()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": no list \"conversations\""));
    }
    Conversation c;
    for (int i = 0; i < turns->list_value().values_size(); ++i) {
      const google::protobuf::Value& turn = turns->list_value().values(i);
      const std::string at = absl::StrCat(where, ": conversations[", i, "]");
      if (!turn.has_struct_value()) return absl::InvalidArgumentError(absl::StrCat(at, ": not an object"));
      const google::protobuf::Value* role = FieldOf(turn.struct_value(), "role");
      const google::protobuf::Value* content = FieldOf(turn.struct_value(), "content");
      if (role == nullptr || !role->has_string_value() || content == nullptr || !content->has_string_value()) {
        return absl::InvalidArgumentError(absl::StrCat(at, ": needs a string \"role\" and \"content\""));
      }
      if (role->string_value() != "system" && role->string_value() != "user" && role->string_value() != "assistant") {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".role: must be one of system, user, assistant, got \"", role->string_value(), "\""));
      }
      c.push_back(Turn{role->string_value(), content->string_value()});
    }
    conversations.push_back(std::move(c));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return conversations;
}

}  // namespace gradsync::cli
