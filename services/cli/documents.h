// What `gradsync data prepare` reads: documents, not bytes. A `.jsonl` file holds one JSON object
// a line (MiniMind's pretrain.jsonl: {"text": ...}; its SFT files: {"conversations": [...]}); any
// other file is one document, whole.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::cli {

// One turn of a conversation: "system", "user" or "assistant", and what was said.
struct Turn {
  std::string role;
  std::string content;
};
using Conversation = std::vector<Turn>;

// Whether `path` is read line by line as JSON (its name ends in ".jsonl").
bool IsJsonLines(const std::string& path);

// The documents of `path`: for a .jsonl file the string `field` of each line's object, in order
// (empty lines skipped); otherwise the whole file. INVALID_ARGUMENT naming the file and line for a
// line that is not a JSON object, nests deeper than 64, or lacks `field` as a string; the file
// reader's errors (not a regular file, too large) otherwise.
absl::StatusOr<std::vector<std::string>> ReadDocuments(const std::string& path, const std::string& field);

// The conversations of a .jsonl file, one a line: {"conversations": [{"role": ..., "content": ...},
// ...]}. INVALID_ARGUMENT naming the file and line for a line that is not such an object, a turn
// without a string role and content, or a role other than system, user and assistant.
absl::StatusOr<std::vector<Conversation>> ReadConversations(const std::string& path);

}  // namespace gradsync::cli
