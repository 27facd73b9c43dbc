// DevicePages: a device array of floats whose memory can be given back to the GPU range by range
// and taken again, the device's counterpart of gradsync/core/page_buffer.h.
//
// cudaMalloc'd memory is one allocation: nothing of it returns to the device until all of it is
// freed. DevicePages reserves the array's virtual addresses once and backs them with physical
// memory in chunks (CUDA's virtual memory management: cuMemAddressReserve, cuMemCreate,
// cuMemMap), so that a rank of a sharded job can drop the chunks holding gradients it does not
// own and map them again, zeroed, when the next backward writes there. The driver's functions are
// looked up through the runtime (cudaGetDriverEntryPoint), so nothing links libcuda and a build
// without a driver still loads.
//
// Semantics, in elements: a released element reads as zero until written again. Release unmaps
// the whole chunks inside its range and zeroes the rest of the range on the stream; Commit maps
// the chunks meeting its range that are not mapped, zeroed on the stream before anything queued
// after it. Reading or writing an element of an unmapped chunk is an illegal address on the
// device, so whoever writes a range commits it first.
//
// A device without virtual memory management (some virtualised GPUs) gets one plain cudaMalloc
// instead, always mapped: Release only zeroes, Commit does nothing, and vmm() says so.
//
// A chunk is the allocation granularity the device recommends (2 MiB on current GPUs), or a
// multiple of it, so that no array has more than kMaxChunks and a release or commit of the whole
// array stays a few hundred driver calls.
//
// Thread-compatible: one thread at a time, with the array's device current.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync::kernels::cuda {

class DevicePages {
 public:
  static constexpr int64_t kMaxChunks = 512;

  // `count` floats on `device`: with `mapped`, every chunk mapped and the array zeroed (queued on
  // `stream`, which the array's zeroing work goes to from now on; not owned, must outlive it);
  // without, nothing mapped until Commit. INTERNAL naming the driver call when the device has no
  // virtual memory management, refuses, or has not the memory.
  static absl::StatusOr<std::unique_ptr<DevicePages>> Create(int device, int64_t count, cudaStream_t stream,
                                                             bool mapped = true);
  ~DevicePages();
  DevicePages(const DevicePages&) = delete;
  DevicePages& operator=(const DevicePages&) = delete;

  float* data() const { return base_; }
  // False where the device has no virtual memory management and nothing is ever given back.
  bool vmm() const { return vmm_; }
  int64_t size() const { return count_; }
  // Elements per chunk (the last chunk may reach past size()).
  int64_t chunk_elements() const { return chunk_bytes_ / static_cast<int64_t>(sizeof(float)); }

  // Maps every chunk meeting elements [begin, end) that is not mapped, and queues its zeroing.
  // The range is clamped to the array. Cheap when everything in it is mapped already.
  absl::Status Commit(int64_t begin, int64_t end);
  // Elements [begin, end) (clamped) read as zero from now on: the chunks wholly inside are
  // unmapped and their memory given back to the device at once, the rest of the range zeroed on
  // the stream. The caller guarantees that no work queued or running touches those whole chunks
  // (their last readers and writers are done); what lies outside the range is untouched.
  absl::Status Release(int64_t begin, int64_t end);

  // Queues the zeroing of the mapped elements of [begin, end) (the unmapped ones read as zero
  // already), one memset per run of mapped chunks.
  absl::Status Zero(int64_t begin, int64_t end);

  // Bytes of physical memory mapped now, and the most mapped at once since the last ResetPeak.
  int64_t mapped_bytes() const { return mapped_chunks_ * chunk_bytes_; }
  int64_t peak_mapped_bytes() const { return peak_chunks_ * chunk_bytes_; }
  void ResetPeak() { peak_chunks_ = mapped_chunks_; }

 private:
  DevicePages(int device, int64_t count, cudaStream_t stream) : device_(device), count_(count), stream_(stream) {}
  absl::Status Reserve();
  absl::Status AllocatePlain();
  absl::Status Map(int64_t chunk);
  absl::Status Unmap(int64_t chunk);

  const int device_;
  const int64_t count_;
  cudaStream_t stream_;
  bool vmm_ = true;
  int64_t chunk_bytes_ = 0;
  float* base_ = nullptr;
  int64_t reserved_bytes_ = 0;
  // Per chunk: its physical allocation (a CUmemGenericAllocationHandle), 0 when unmapped.
  std::vector<unsigned long long> handles_;
  int64_t mapped_chunks_ = 0;
  int64_t peak_chunks_ = 0;
};

}  // namespace gradsync::kernels::cuda
