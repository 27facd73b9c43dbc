#include "decode_table.h"

#include "absl/strings/str_cat.h"
#include "byte_level.h"

namespace gradsync::tokenizer {

void DecodeTable::Set(int32_t id, std::string_view token) {
  if (static_cast<size_t>(id) >= bytes_.size()) bytes_.resize(static_cast<size_t>(id) + 1);
  std::optional<std::string> bytes = FromByteLevel(token);
  bytes_[static_cast<size_t>(id)] = bytes ? *std::move(bytes) : std::string(token);
}

absl::StatusOr<std::string> DecodeTable::Decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= size() || !bytes_[static_cast<size_t>(id)]) {
      return absl::InvalidArgumentError(
          absl::StrCat("token ", i, " (id ", id, ") is not in the vocabulary of ", size(), " ids"));
    }
    out += *bytes_[static_cast<size_t>(id)];
  }
  return out;
}

}  // namespace gradsync::tokenizer
