#include "gradsync/cluster/local_tokens.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gradsync/core/random_token.h"

namespace gradsync::cluster {
namespace {

namespace fs = std::filesystem;

absl::Status Failed(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat("cannot write ", what, " ", path, ": ", std::strerror(errno)));
}

// `text` into `path` with mode 0600 from the first byte on: written to `path`.tmp (never through
// a link), then renamed over `path`.
absl::Status WritePrivateFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Failed("the token file", tmp);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (::close(fd) != 0 || !written) return Failed("the token file", tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Failed("the token file", path);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> WriteLocalTokens(const std::string& state_dir) {
  const std::string dir = (fs::path(state_dir) / "tokens").string();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Failed("the token directory", dir);
  // An existing directory may have been made with looser permissions.
  if (::chmod(dir.c_str(), 0700) != 0) return Failed("the token directory", dir);
  std::map<std::string, std::string> files;
  for (const char* name : {kAuthToken, kClusterToken, kMetricsToken}) {
    const std::string path = (fs::path(dir) / absl::StrCat(name, ".token")).string();
    if (absl::Status s = WritePrivateFile(path, NewRandomToken() + "\n"); !s.ok()) return s;
    files[name] = path;
  }
  return files;
}

}  // namespace gradsync::cluster
