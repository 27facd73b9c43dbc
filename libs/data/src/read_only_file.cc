#include "read_only_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "gradsync/core/bounded_file.h"

namespace gradsync::data::internal {

absl::StatusOr<std::shared_ptr<const ReadOnlyFile>> ReadOnlyFile::Open(const std::string& path, int64_t* size) {
  absl::StatusOr<int> fd = OpenRegularFile(path);
  if (absl::IsFailedPrecondition(fd.status())) return absl::InvalidArgumentError(fd.status().message());
  if (!fd.ok()) return fd.status();
  auto file = std::make_shared<const ReadOnlyFile>(*fd);
  struct stat st {};
  if (::fstat(*fd, &st) != 0) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot stat: ", std::strerror(errno)));
  *size = st.st_size;
  return file;
}

ReadOnlyFile::~ReadOnlyFile() { ::close(fd_); }

bool ReadOnlyFile::ReadAt(void* out, size_t n, int64_t offset) const {
  char* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += got;
  }
  return true;
}

}  // namespace gradsync::data::internal
