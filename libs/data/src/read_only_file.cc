#include "read_only_file.h"

#include <unistd.h>

#include <cerrno>

namespace gradsync::data::internal {

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
