// A POSIX shared-memory segment mapped into this process. Private to libs/comm.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::comm::internal {

class ShmSegment {
 public:
  // Creates a new segment of `bytes` under a fresh random name, with its memory reserved (so a
  // full /dev/shm is an error here, not a SIGBUS later). RESOURCE_EXHAUSTED or INTERNAL with the
  // system's reason.
  static absl::StatusOr<ShmSegment> Create(size_t bytes);
  // Maps an existing segment, which must be `bytes` long. NOT_FOUND where the name is not visible
  // (another host, another IPC namespace).
  static absl::StatusOr<ShmSegment> Open(const std::string& name, size_t bytes);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  // Unmaps; unlinks the name too if this process created it and has not unlinked it yet.
  ~ShmSegment();

  // Removes the name; the memory lives on while mapped. Done once every rank has mapped it, so
  // nothing is left behind in /dev/shm whichever process dies later.
  void Unlink();

  const std::string& name() const { return name_; }
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  ShmSegment(std::string name, std::byte* data, size_t size, bool owner)
      : name_(std::move(name)), data_(data), size_(size), owner_(owner) {}
  void Release();

  std::string name_;
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool owner_ = false;  // created here and still linked
};

}  // namespace gradsync::comm::internal
