// Which physical GPU a rank computes on, as ranks on many hosts see it.
//
// A CUDA ordinal is an index into the devices one process can see: CUDA_VISIBLE_DEVICES
// renumbers them from 0, so two workers of one host pinned to different GPUs both say "cuda:0",
// and one GPU can be cuda:1 to one worker and cuda:0 to another. Host names repeat across
// containers too. The device's UUID (what `nvidia-smi -L` prints) names one GPU everywhere.
// Plain C++ over the registered v1::Device: the coordinator decides with it, without CUDA.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::device {

inline constexpr size_t kGpuUuidBytes = 16;

// The 16 bytes of a CUDA device UUID (cudaDeviceProp::uuid) as nvidia-smi prints them:
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex in byte order.
std::string FormatGpuUuid(std::span<const unsigned char, kGpuUuidBytes> bytes);

// Whether two ranks compute on one GPU, given each rank's worker host name and registered
// device. By UUID when both registered one; by host name and ordinal when either did not (a
// worker from before UUIDs were registered). False when either computes on a CPU.
bool SameGpu(std::string_view host_a, const v1::Device& a, std::string_view host_b, const v1::Device& b);

// "GPU 1 (GPU-8f4e...)", or "GPU 1" without a UUID: how messages name a registered GPU.
std::string GpuName(const v1::Device& d);

}  // namespace gradsync::device
