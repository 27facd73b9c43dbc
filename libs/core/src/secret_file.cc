#include "gradsync/core/secret_file.h"

#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file ", path));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
