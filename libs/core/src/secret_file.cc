#include "gradsync/core/secret_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gradsync/core/bounded_file.h"

namespace gradsync {
namespace {

// Far more than any token, certificate chain or key.
constexpr int64_t kMaxSecretFileBytes = 1 << 20;

std::string Mode(mode_t mode) { return absl::StrFormat("%04o", mode & 07777); }

// Whether users other than the file's owner and group can reach `path` through its directory: they
// cannot when the directory denies them search permission (a 0700 secrets directory).
bool DirectoryOpenToOthers(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return true;
  return (st.st_mode & S_IXOTH) != 0;
}

// A token is a secret only while nobody else can read or replace it.
absl::Status CheckTokenFilePrivate(const std::string& path, const FileOwnership& file, const std::string& what) {
  if ((file.mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(what, " file ", path, " is writable by other users (mode ",
                                                    Mode(file.mode), "): anyone who can write it chooses the "
                                                    "token; chmod 600 it"));
  }
  // World-readable is refused in a file of this user's own that others can reach. A file owned by
  // another user (a secret mounted into a container, read by the service's own user) can only be
  // read by being open to others: whoever mounted it decided who sees it.
  if ((file.mode & S_IROTH) != 0 && file.owner == ::geteuid() && DirectoryOpenToOthers(path)) {
    return absl::PermissionDeniedError(absl::StrCat(what, " file ", path, " is readable by every user (mode ",
                                                    Mode(file.mode), "): chmod 600 it, or keep it in a directory "
                                                    "only you can enter"));
  }
  return absl::OkStatus();
}

absl::Status CheckTokenText(const std::string& token, const std::string& path, const std::string& what) {
  if (token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(what, " file ", path, " holds a token shorter than ",
                                                   kMinTokenLength, " characters, which can be guessed"));
  }
  for (const char c : token) {
    // An HTTP header and gRPC metadata carry it: visible ASCII only, no spaces.
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " file ", path, " holds a token with a space, a control character or a non-ASCII byte; a token is "
          "one word of visible ASCII characters"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadSecret(const std::string& path, const std::string& what, FileOwnership* seen) {
  // Bounded and regular only: /dev/zero or a fifo named as a token file is an error, not a hang or
  // an allocation without end.
  absl::StatusOr<std::string> read = ReadBoundedFile(path, kMaxSecretFileBytes, absl::StrCat(what, " file"), seen);
  if (absl::IsNotFound(read.status())) return absl::NotFoundError(absl::StrCat("cannot read ", what, " file ", path));
  if (!read.ok()) return read.status();
  std::string text = *std::move(read);
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " file ", path, " is empty"));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::string> ReadSecretFile(const std::string& path, const std::string& what) {
  return ReadSecret(path, what, nullptr);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, const std::string& what) {
  FileOwnership file;
  auto text = ReadSecret(path, what, &file);
  if (!text.ok()) return text.status();
  if (absl::Status s = CheckTokenFilePrivate(path, file, what); !s.ok()) return s;
  absl::StripAsciiWhitespace(&*text);
  if (absl::Status s = CheckTokenText(*text, path, what); !s.ok()) return s;
  return text;
}

}  // namespace gradsync
