#include "tokenizer_file.h"

#include "gradsync/core/json_depth.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/bounded_file.h"

namespace gradsync::tokenizer {

absl::StatusOr<std::string> ReadTokenizerFile(const std::string& path) {
  return ReadBoundedFile(path, kMaxTokenizerFileBytes, "a tokenizer file");
}

absl::StatusOr<google::protobuf::Value> ReadJsonFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTokenizerFile(path);
  if (!text.ok()) return text.status();
  if (absl::Status s = CheckJsonDepth(*text, path); !s.ok()) return s;
  google::protobuf::Value value;
  if (!google::protobuf::util::JsonStringToMessage(*text, &value).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is not valid JSON"));
  }
  return value;
}

}  // namespace gradsync::tokenizer
