#include "gradsync/core/secret_file.h"


#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gradsync/core/bounded_file.h"

namespace gradsync {
namespace {

// Far more than any token, certificate chain or key.
constexpr int64_t kMaxSecretFileBytes = 1 << 20;

}  // namespace

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what) {
  // Bounded and regular only: /dev/zero or a fifo named as a token file is an error, not a hang or
  // an allocation without end.
  absl::StatusOr<std::string> read = ReadBoundedFile(path, kMaxSecretFileBytes, absl::StrCat(what, " file"));
  if (absl::IsNotFound(read.status())) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file ", path));
  if (!read.ok()) return read.status();
  std::string text = *std::move(read);
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " file ", path, " is empty"));
  }
  return text;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& what) {
  auto text = ReadSecretFile(path, what);
  if (!text.ok()) return text.status();
  absl::StripAsciiWhitespace(&*text);
  return text;
}

}  // namespace gradsync
