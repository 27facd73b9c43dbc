#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/device_buffer.h"
#include "gradsync/kernels/cuda/matmul.cuh"
#include "gradsync/nn/cuda/cuda_model.h"
#include "gradsync/nn/cuda/cuda_optimizer.h"
#include "model_bench_gpu.h"

namespace gradsync::bench {
namespace {

using kernels::cuda::CudaStatus;
using kernels::cuda::DeviceBuffer;

// Best rate of `reps` products [n, n] x [n, n]^T in T, timed with events on `stream`.
template <typename T>
absl::StatusOr<double> MatmulPeak(cudaStream_t stream, int64_t n = 8192, int reps = 10) {
  auto ctx = kernels::cuda::MatmulContext::Create();
  if (!ctx.ok()) return ctx.status();
  // Random values in [-1, 1): a power-limited card runs zeros faster than real data, which would
  // inflate the peak.
  std::vector<T> host(static_cast<size_t>(n * n));
  uint32_t x = 12345;
  for (T& v : host) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<T>(static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
  }
  auto a = DeviceBuffer<T>::FromHost(host), b = DeviceBuffer<T>::FromHost(host);
  auto c = DeviceBuffer<T>::Allocate(n * n);
  if (!a.ok()) return a.status();
  if (!b.ok()) return b.status();
  if (!c.ok()) return c.status();
  cudaEvent_t start, stop;
  if (absl::Status s = CudaStatus(cudaEventCreate(&start), "cudaEventCreate"); !s.ok()) return s;
  if (absl::Status s = CudaStatus(cudaEventCreate(&stop), "cudaEventCreate"); !s.ok()) return s;
  double best = 0;
  absl::Status status;
  for (int r = 0; r < reps + 2 && status.ok(); ++r) {
    (void)cudaEventRecord(start, stream);
    status = kernels::cuda::MatmulForward<T>(**ctx, c->data(), a->data(), b->data(), nullptr, n, n, n, stream);
    (void)cudaEventRecord(stop, stream);
    if (status.ok()) status = CudaStatus(cudaEventSynchronize(stop), "matmul peak");
    float ms = 0;
    (void)cudaEventElapsedTime(&ms, start, stop);
    if (r >= 2 && ms > 0) best = std::max(best, 2.0 * n * n * n / (ms * 1e-3));  // two warm-up products
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  if (!status.ok()) return status;
  return best;
}

}  // namespace

absl::StatusOr<GpuModelBench> RunGpuModelBench(const nn::ModelPlan& plan, const nn::Batch& batch,
                                               int64_t tokens_per_step, int device, bool bf16,
                                               const std::string& attention, int steps, int warmup) {
  absl::StatusOr<nn::cuda::AttentionKernels> kernels = nn::cuda::ParseAttentionKernels(attention);
  if (!kernels.ok()) return absl::InvalidArgumentError(absl::StrCat("--attention: ", kernels.status().message()));
  if (absl::Status s = CudaStatus(cudaSetDevice(device), "cudaSetDevice"); !s.ok()) return s;
  cudaDeviceProp prop{};
  if (absl::Status s = CudaStatus(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"); !s.ok()) {
    return s;
  }
  cudaStream_t stream = nullptr;
  if (absl::Status s = CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      !s.ok()) {
    return s;
  }
  GpuModelBench out;
  out.gpu = prop.name;
  absl::Status status = [&]() -> absl::Status {
    auto peak = bf16 ? MatmulPeak<__nv_bfloat16>(stream) : MatmulPeak<float>(stream);
    if (!peak.ok()) return peak.status();
    out.peak_flops = *peak;

    nn::cuda::CudaModelOptions mo;
    mo.device = device;
    mo.stream = stream;
    mo.precision = bf16 ? nn::cuda::Precision::kBf16 : nn::cuda::Precision::kFp32;
    mo.attention = *kernels;
    auto model = nn::cuda::CreateCudaModel(plan, mo);
    if (!model.ok()) return model.status();
    out.model = (*model)->Describe();
    auto clip = nn::cuda::CudaGradClip::Create(stream);
    if (!clip.ok()) return clip.status();
    auto adamw = nn::cuda::CudaAdamW::Create((*model)->layout(), nn::AdamWConfig{.weight_decay = 0.1}, stream);
    if (!adamw.ok()) return adamw.status();
    for (int step = 0; step < warmup + steps; ++step) {
      const absl::Time t0 = absl::Now();
      (*model)->ZeroGrads();
      // Returns once the step's kernels ran: it reads the loss back.
      auto loss = (*model)->ForwardBackward(batch, 1.0f / static_cast<float>(tokens_per_step), {});
      if (!loss.ok()) return loss.status();
      const absl::Time t1 = absl::Now();
      if (absl::Status s = (*clip)->Compute((*model)->grads(), 1.0); !s.ok()) return s;
      if (absl::Status s = (*adamw)->Step((*model)->params(), (*model)->grads(), 1e-4, (*clip)->scale()); !s.ok()) {
        return s;
      }
      if (absl::Status s = (*model)->Synchronize(); !s.ok()) return s;
      const absl::Time t2 = absl::Now();
      if (step < warmup) continue;
      out.forward_backward_seconds += absl::ToDoubleSeconds(t1 - t0) / steps;
      out.optimizer_seconds += absl::ToDoubleSeconds(t2 - t1) / steps;
    }
    return absl::OkStatus();
  }();
  (void)cudaStreamDestroy(stream);
  if (!status.ok()) return status;
  return out;
}

}  // namespace gradsync::bench
