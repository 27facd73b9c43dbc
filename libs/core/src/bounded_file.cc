#include "gradsync/core/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

std::string Limit(int64_t bytes) {
  if (bytes >= (int64_t{1} << 20) && bytes % (int64_t{1} << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  return absl::StrCat(bytes, " bytes");
}

absl::Status TooLarge(const std::string& path, int64_t max_bytes, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": is larger than ", what, " may be (", Limit(max_bytes), ")"));
}

// The open file's size, if it is a regular file of at most max_bytes.
absl::StatusOr<int64_t> CheckOpenFile(int fd, const std::string& path, int64_t max_bytes, absl::string_view what,
                                      FileOwnership* seen) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return absl::InternalError(absl::StrCat(path, ": cannot stat: ", std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not ", what));
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is not a regular file (a device, fifo or socket cannot be ", what, ")"));
  }
  if (st.st_size > max_bytes) return TooLarge(path, max_bytes, what);
  if (seen != nullptr) *seen = FileOwnership{st.st_uid, st.st_mode};
  return static_cast<int64_t>(st.st_size);
}

}  // namespace

absl::StatusOr<int> OpenRegularFile(const std::string& path, Links links) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (links == Links::kRefuse ? O_NOFOLLOW : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0 && errno == ELOOP && links == Links::kRefuse) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": is a symbolic link, which is not followed here"));
  }
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st {};
  absl::Status problem;
  if (::fstat(fd, &st) != 0) {
    problem = absl::InternalError(absl::StrCat(path, ": cannot stat: ", std::strerror(errno)));
  } else if (S_ISDIR(st.st_mode)) {
    problem = absl::FailedPreconditionError(absl::StrCat(path, ": is a directory, not a file"));
  } else if (!S_ISREG(st.st_mode)) {
    problem = absl::FailedPreconditionError(
        absl::StrCat(path, ": is not a regular file (a fifo, device or socket is never read)"));
  } else if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    problem = absl::InternalError(absl::StrCat(path, ": cannot clear O_NONBLOCK: ", std::strerror(errno)));
  }
  if (!problem.ok()) {
    ::close(fd);
    return problem;
  }
  return fd;
}

absl::StatusOr<std::string> ReadBoundedFile(const std::string& path, int64_t max_bytes, absl::string_view what,
                                            FileOwnership* seen) {
  // O_NONBLOCK: opening a fifo must not wait for a writer (the type check then refuses it).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  absl::Cleanup close_fd = [fd] { ::close(fd); };
  const absl::StatusOr<int64_t> size = CheckOpenFile(fd, path, max_bytes, what, seen);
  if (!size.ok()) return size.status();
  // Read until end of file, never past max_bytes: a file that grows while it is read is refused
  // like one that was too large from the start.
  std::string bytes;
  bytes.reserve(static_cast<size_t>(*size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
    if (n == 0) return bytes;
    if (static_cast<int64_t>(bytes.size()) + n > max_bytes) return TooLarge(path, max_bytes, what);
    bytes.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace gradsync
