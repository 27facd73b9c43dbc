#include "file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gradsync::ckpt {
namespace {

// Distinguishes temporaries of threads of one process writing next to each other.
std::atomic<uint64_t> temp_counter{0};

std::string ParentDir(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

absl::Status ErrnoStatus(const std::string& what, const std::string& path) {
  const int err = errno;
  const std::string msg = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  return absl::InternalError(msg);
}

absl::StatusOr<AtomicFile> AtomicFile::Create(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(ParentDir(path), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create directory ", ParentDir(path), ": ", ec.message()));
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", temp_counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("cannot create", tmp);
  return AtomicFile(path, std::move(tmp), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)), fd_(other.fd_) {
  other.fd_ = -1;
  other.tmp_.clear();
}

AtomicFile::~AtomicFile() { Abandon(); }

void AtomicFile::Abandon() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

absl::Status AtomicFile::Append(std::span<const std::byte> bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": write after commit or failure"));
  const char* data = reinterpret_cast<const char*>(bytes.data());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, data + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status s = ErrnoStatus("cannot write", tmp_);
      Abandon();
      return s;
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFile::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, ": commit after commit or failure"));
  if (::fsync(fd_) != 0) {
    absl::Status s = ErrnoStatus("cannot sync", tmp_);
    Abandon();
    return s;
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    absl::Status s = ErrnoStatus("cannot close", tmp_);
    Abandon();
    return s;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    absl::Status s = ErrnoStatus("cannot rename to", path_);
    Abandon();
    return s;
  }
  tmp_.clear();
  return SyncDir(ParentDir(path_));
}

absl::Status AppendHashed(AtomicFile& out, std::span<const std::byte> bytes, StreamingChecksum& sum) {
  constexpr size_t kPiece = 1 << 20;
  for (size_t at = 0; at < bytes.size(); at += kPiece) {
    const std::span<const std::byte> piece = bytes.subspan(at, std::min(kPiece, bytes.size() - at));
    sum.Update(piece);
    if (absl::Status s = out.Append(piece); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  if (absl::Status s = file->Append(contents); !s.ok()) return s;
  return file->Commit();
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("cannot open directory", dir);
  const bool ok = ::fsync(fd) == 0;
  absl::Status s = ok ? absl::OkStatus() : ErrnoStatus("cannot sync directory", dir);
  ::close(fd);
  return s;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  absl::StatusOr<int> opened = OpenRegularFile(path);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    absl::Status s = ErrnoStatus("cannot stat", path);
    ::close(fd);
    return s;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  absl::Status s;
  while (got < data.size() && s.ok()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) s = ErrnoStatus("cannot read", path);
    if (n == 0) s = absl::DataLossError(absl::StrCat(path, ": shrank while it was read"));
    if (n > 0) got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (!s.ok()) return s;
  return data;
}

}  // namespace gradsync::ckpt
