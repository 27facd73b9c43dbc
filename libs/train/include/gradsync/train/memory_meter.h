// What a rank tells about its memory (v1::RankMemory): the bytes its replica holds for parameters,
// gradients and optimizer state (Replica::Memory), and the peaks of its process.
//
//   peak RSS     VmHWM of /proc/self/status, reset when the meter starts (clear_refs 5) so that a
//                worker that trained a larger job before reports this one's; where the kernel
//                refuses the reset, the process's peak since it started.
//   peak device  on a GPU rank only: cudaMemGetInfo's total less free of the calling thread's
//                device (the replica made it current), sampled at each step boundary and the most
//                kept. Every allocation on the device counts, other processes' too; memory held
//                only within a step between samples is missed. device_memory_cuda.cc in CUDA
//                builds, device_memory_no_cuda.cc otherwise.
//
// Not thread-safe: the training loop's thread owns it.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "gradsync/train/replica.h"
#include "gradsync/v1/metrics.pb.h"

namespace gradsync::train {

// The process's peak resident set size in bytes (VmHWM); 0 where /proc does not tell.
int64_t PeakRssBytes();
// Resets the peak to the present resident set (writes "5" to /proc/self/clear_refs, Linux 4.0+).
// False where the kernel refuses.
bool ResetPeakRss();
// Bytes in use on the calling thread's current CUDA device (its total less its free memory).
// FAILED_PRECONDITION in a build without CUDA; the CUDA error otherwise.
absl::StatusOr<int64_t> DeviceBytesInUse();

class MemoryMeter {
 public:
  // Resets the process's peak RSS; `on_gpu`: the rank computes on a GPU, whose memory is sampled.
  void Start(bool on_gpu);
  // `rank`'s memory now: `held` (its replica's Memory()) and the peaks so far, this sample
  // included. A device that cannot be asked leaves the device peak as it was.
  v1::RankMemory Sample(int rank, const MemoryFootprint& held);

 private:
  bool on_gpu_ = false;
  int64_t peak_device_ = 0;
};

}  // namespace gradsync::train
