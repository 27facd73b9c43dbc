// DeviceBuffer<T>: one cudaMalloc'd array of T that frees itself, for tests and tools.
//
// Copies are synchronous (cudaMemcpy) and therefore also wait for the kernels before them, which is
// what a test comparing against a CPU reference wants. Move-only. Not for hot paths: training code
// allocates its arenas once and hands raw pointers to the launchers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { Release(); }

  // `count` elements on the current device, uninitialised. A zero count allocates nothing and
  // data() is null.
  static absl::StatusOr<DeviceBuffer> Allocate(size_t count) {
    DeviceBuffer buffer;
    if (count == 0) return buffer;
    void* ptr = nullptr;
    absl::Status status =
        CudaStatus(cudaMalloc(&ptr, count * sizeof(T)), absl::StrCat("cudaMalloc of ", count * sizeof(T), " bytes"));
    if (!status.ok()) return status;
    buffer.data_ = static_cast<T*>(ptr);
    buffer.size_ = count;
    return buffer;
  }

  // A buffer holding a copy of `host`.
  static absl::StatusOr<DeviceBuffer> FromHost(const std::vector<T>& host) {
    absl::StatusOr<DeviceBuffer> buffer = Allocate(host.size());
    if (!buffer.ok()) return buffer.status();
    absl::Status status = buffer->CopyFromHost(host);
    if (!status.ok()) return status;
    return buffer;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

  // INVALID_ARGUMENT unless host.size() == size().
  absl::Status CopyFromHost(const std::vector<T>& host) {
    if (host.size() != size_) return SizeError("CopyFromHost", host.size());
    if (size_ == 0) return absl::OkStatus();
    return CudaStatus(cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice),
                      "cudaMemcpy host to device");
  }

  // Waits for all prior work on the device, then returns the contents.
  absl::StatusOr<std::vector<T>> ToHost() const {
    std::vector<T> host(size_);
    if (size_ == 0) return host;
    absl::Status status = CudaStatus(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost),
                                     "cudaMemcpy device to host");
    if (!status.ok()) return status;
    return host;
  }

  // Sets every byte to `byte` (0xFF makes every float and bf16 a NaN: a poison that shows which
  // elements a kernel failed to write).
  absl::Status FillBytes(uint8_t byte) {
    if (size_ == 0) return absl::OkStatus();
    return CudaStatus(cudaMemset(data_, byte, size_ * sizeof(T)), "cudaMemset");
  }

 private:
  absl::Status SizeError(const char* what, size_t got) const {
    return absl::InvalidArgumentError(
        absl::StrCat("DeviceBuffer::", what, ": ", got, " elements for a buffer of ", size_));
  }
  void Release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gradsync::kernels::cuda
