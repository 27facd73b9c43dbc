#include "shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync::comm::internal {
namespace {

std::string Errno(int err) { return std::strerror(err); }

std::string FreshName() {
  std::random_device rd;
  const uint64_t a = (static_cast<uint64_t>(rd()) << 32) | rd();
  return absl::StrFormat("/gradsync-%d-%016x", getpid(), a);
}

absl::StatusOr<std::byte*> Map(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return absl::InternalError(absl::StrCat("mmap of ", name, ": ", Errno(errno)));
  return static_cast<std::byte*>(p);
}

}  // namespace

absl::StatusOr<ShmSegment> ShmSegment::Create(size_t bytes) {
  const std::string name = FreshName();
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("shm_open ", name, ": ", Errno(errno)));
  auto fail = [&](absl::Status s) {
    close(fd);
    shm_unlink(name.c_str());
    return s;
  };
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    return fail(absl::InternalError(absl::StrCat("ftruncate ", name, ": ", Errno(errno))));
  }
  // tmpfs hands out pages on first touch; reserving them now turns a full /dev/shm (64 MiB in a
  // default container) into this error instead of a SIGBUS in the middle of a collective.
  if (const int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
    return fail(absl::ResourceExhaustedError(
        absl::StrCat("cannot reserve ", bytes, " bytes of shared memory for ", name, ": ", Errno(err))));
  }
  auto data = Map(fd, bytes, name);
  if (!data.ok()) return fail(data.status());
  close(fd);
  return ShmSegment(name, *data, bytes, true);
}

absl::StatusOr<ShmSegment> ShmSegment::Open(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int err = errno;
    const std::string why = absl::StrCat("shm_open ", name, ": ", Errno(err));
    return err == ENOENT ? absl::NotFoundError(why) : absl::InternalError(why);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("fstat ", name, ": ", Errno(err)));
  }
  if (static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return absl::FailedPreconditionError(absl::StrCat(name, " is ", st.st_size, " bytes, expected ", bytes));
  }
  auto data = Map(fd, bytes, name);
  close(fd);
  if (!data.ok()) return data.status();
  return ShmSegment(name, *data, bytes, false);
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owner_(std::exchange(other.owner_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Release();
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() { Release(); }

void ShmSegment::Unlink() {
  if (owner_) shm_unlink(name_.c_str());
  owner_ = false;
}

void ShmSegment::Release() {
  Unlink();
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
}

}  // namespace gradsync::comm::internal
