// The GPU half of gradsync-model-bench: the CUDA model's training step on one GPU, and the peak
// the card's dense matmuls reach, which model FLOPs utilisation is measured against. Built with
// CUDA (model_bench_cuda.cc); elsewhere (model_bench_no_cuda.cc) it says the build has no CUDA.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gradsync/nn/model.h"

namespace gradsync::bench {

struct GpuModelBench {
  std::string gpu;                      // the card's name
  std::string model;                    // the model's Describe()
  double forward_backward_seconds = 0;  // per step
  double optimizer_seconds = 0;         // clipping + AdamW, per step
  // Dense matmul rate measured on the card in the model's precision (bf16 with fp32 accumulate,
  // or plain fp32): the best of a few 8192^3 products through the same cuBLASLt path as the model.
  double peak_flops = 0;
};

// `attention` names the bf16 attention kernels (products, flash or fused; nn/cuda/cuda_model.h).
absl::StatusOr<GpuModelBench> RunGpuModelBench(const nn::ModelPlan& plan, const nn::Batch& batch,
                                               int64_t tokens_per_step, int device, bool bf16,
                                               const std::string& attention, int steps, int warmup);

}  // namespace gradsync::bench
