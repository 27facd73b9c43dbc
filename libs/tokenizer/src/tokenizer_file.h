// Reading the files a tokenizer is loaded from: bounded, regular files only, and errors that
// name the path and the problem, never what the file holds.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/struct.pb.h"

namespace gradsync::tokenizer {

// The largest tokenizer file read: 256 MiB (Llama-3's tokenizer.json is 9 MiB).
inline constexpr int64_t kMaxTokenizerFileBytes = int64_t{256} << 20;

// The whole regular file at `path`. NOT_FOUND when it cannot be opened; INVALID_ARGUMENT for a
// directory, a device or fifo, or a file over kMaxTokenizerFileBytes; INTERNAL on a read error.
absl::StatusOr<std::string> ReadTokenizerFile(const std::string& path);

// The file as a JSON value. ReadTokenizerFile's errors, and INVALID_ARGUMENT when it is not JSON
// (the parser's message is not passed on: it quotes the file).
absl::StatusOr<google::protobuf::Value> ReadJsonFile(const std::string& path);

}  // namespace gradsync::tokenizer
