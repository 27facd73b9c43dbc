#include "gradsync/core/endpoints_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status WriteEndpointsFile(const std::string& path, const std::map<std::string, std::string>& fields) {
  std::string json = "{";
  const char* sep = "";
  for (const auto& [name, value] : fields) {
    absl::StrAppend(&json, sep, JsonString(name), ": ", JsonString(value));
    sep = ", ";
  }
  return ReplaceFileAtomically(path, json + "}\n");
}

absl::Status ReplaceFileAtomically(const std::string& path, std::string_view contents) {
  const std::string tmp = path + ".tmp";
  auto failed = [&tmp](const std::string& what) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot ", what, " ", tmp, ": ", std::strerror(error)));
  };
  // A temporary file left by a crash, or planted as a link, is replaced, never followed.
  ::unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  for (size_t done = 0; done < contents.size();) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      ::close(fd);
      return failed("write");
    }
    done += static_cast<size_t>(n);
  }
  // A full disk may show only here: the old file stays unless the new one is whole and on disk.
  if (::fsync(fd) != 0) {
    ::close(fd);
    return failed("sync");
  }
  if (::close(fd) != 0) return failed("close");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return failed(absl::StrCat("rename to ", path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return absl::OkStatus();
}

std::string LoopbackAddress(int port) { return absl::StrCat("127.0.0.1:", port); }

}  // namespace gradsync
