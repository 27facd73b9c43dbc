#include "gradsync/cluster/own_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_format.h"

namespace gradsync::cluster {
namespace {

absl::Status CheckOwn(const std::string& path, bool directory) {
  const char* what = directory ? "state directory" : "file";
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrFormat("%s %s: %s", what, path, std::strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s %s is a symbolic link: name the %s itself", what, path, directory ? "directory" : "file"));
  }
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s %s is not a %s", what, path, directory ? "directory" : "regular file"));
  }
  if (st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s belongs to uid %d, not to you (uid %d): another user could point your commands, and your "
        "tokens, elsewhere; use a directory of your own",
        what, path, st.st_uid, ::geteuid()));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s is writable by %s (mode %04o): another user could replace what it holds; chmod go-w it, or use "
        "another",
        what, path, (st.st_mode & S_IWOTH) != 0 ? "others" : "its group", st.st_mode & 07777));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOwnDirectory(const std::string& dir) { return CheckOwn(dir, true); }

absl::Status CheckOwnFile(const std::string& path) { return CheckOwn(path, false); }

absl::Status MakeOwnDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path(dir);
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrFormat("cannot create %s: %s", dir, std::strerror(errno)));
  }
  return CheckOwnDirectory(dir);
}

}  // namespace gradsync::cluster
