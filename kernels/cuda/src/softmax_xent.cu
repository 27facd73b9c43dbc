// Softmax + cross-entropy forward/backward and the loss sum (math in softmax_xent.cuh).
#include "gradsync/kernels/cuda/softmax_xent.cuh"

#include "absl/strings/str_cat.h"
#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::FromFloat;
using internal::kFullMask;
using internal::kWarpSize;
using internal::ToFloat;

constexpr int kThreads = 512;
constexpr int kWarps = kThreads / kWarpSize;

// Running softmax statistics: max m and sum s of exp(z - m). An empty state has m = -inf, s = 0.
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ MaxSum Combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};  // both empty: exp(-inf - -inf) would be NaN
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum WarpCombine(MaxSum v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const MaxSum other{__shfl_xor_sync(kFullMask, v.m, offset), __shfl_xor_sync(kFullMask, v.s, offset)};
    v = Combine(v, other);
  }
  return v;
}

__device__ __forceinline__ void Accumulate(MaxSum& acc, float x) {
  if (x > acc.m) {
    acc.s = acc.s * expf(acc.m - x) + 1.0f;
    acc.m = x;
  } else {
    acc.s += expf(x - acc.m);
  }
}

// `vec`: rows start 16-byte aligned, so elements [0, v / kVec * kVec) go by packs and the rest one
// at a time. Either way each element is read and written by one thread.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    SoftmaxXentKernel(T* dlogits, float* row_loss, const T* logits, const int32_t* targets, int64_t v, int64_t stride,
                      bool vec, float scale, int32_t ignore_index) {
  constexpr int kVec = internal::kPackWidth<T>;
  using Pack = internal::Pack<T, kVec>;
  const int64_t row = blockIdx.x;
  const T* z = logits + row * stride;
  T* dz = dlogits == nullptr ? nullptr : dlogits + row * stride;
  const int32_t target = targets[row];
  const int64_t packs = vec ? v / kVec : 0;
  if (target == ignore_index) {  // block-uniform
    if (threadIdx.x == 0 && row_loss != nullptr) row_loss[row] = 0.0f;
    if (dz != nullptr) {
      for (int64_t j = threadIdx.x; j < v; j += kThreads) dz[j] = FromFloat<T>(0.0f);
    }
    return;
  }
  const bool valid = target >= 0 && target < v;
  // Read before any thread may overwrite it (dlogits may alias logits).
  const float target_logit = valid ? ToFloat(z[target]) : 0.0f;

  MaxSum acc{-INFINITY, 0.0f};
  for (int64_t q = threadIdx.x; q < packs; q += kThreads) {
    const Pack p = reinterpret_cast<const Pack*>(z)[q];
#pragma unroll
    for (int e = 0; e < kVec; ++e) Accumulate(acc, ToFloat(p.v[e]));
  }
  for (int64_t j = packs * kVec + threadIdx.x; j < v; j += kThreads) Accumulate(acc, ToFloat(z[j]));
  __shared__ float shared_m[kWarps], shared_s[kWarps];
  acc = WarpCombine(acc);
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) {
    shared_m[warp] = acc.m;
    shared_s[warp] = acc.s;
  }
  __syncthreads();
  acc = lane < kWarps ? MaxSum{shared_m[lane], shared_s[lane]} : MaxSum{-INFINITY, 0.0f};
  acc = WarpCombine(acc);  // every warp computes the same total, in the same order
  const float max = acc.m, sum = acc.s;

  if (threadIdx.x == 0 && row_loss != nullptr) {
    row_loss[row] = valid ? logf(sum) - (target_logit - max) : NAN;
  }
  if (dz == nullptr) return;
  const float inv_sum = 1.0f / sum;
  auto grad = [&](int64_t j, float x) {
    const float p = expf(x - max) * inv_sum;
    return FromFloat<T>(scale * (j == target ? p - 1.0f : p));
  };
  for (int64_t q = threadIdx.x; q < packs; q += kThreads) {
    Pack p = reinterpret_cast<const Pack*>(z)[q];
#pragma unroll
    for (int e = 0; e < kVec; ++e) p.v[e] = grad(q * kVec + e, ToFloat(p.v[e]));
    reinterpret_cast<Pack*>(dz)[q] = p;
  }
  for (int64_t j = packs * kVec + threadIdx.x; j < v; j += kThreads) dz[j] = grad(j, ToFloat(z[j]));
}

constexpr int kSumThreads = 1024;

__global__ void __launch_bounds__(kSumThreads)
    XentLossSumKernel(double* loss_sum, int64_t* count, const float* row_loss, const int32_t* targets, int64_t n,
                      int32_t ignore_index) {
  double sum = 0.0;
  double rows = 0.0;  // counted in double so one reduction shape serves both
  for (int64_t i = threadIdx.x; i < n; i += kSumThreads) {
    if (targets[i] == ignore_index) continue;
    sum += row_loss[i];
    rows += 1.0;
  }
  __shared__ double scratch[kSumThreads / kWarpSize];
  sum = internal::BlockSum<kSumThreads>(sum, scratch);
  rows = internal::BlockSum<kSumThreads>(rows, scratch);
  if (threadIdx.x == 0) {
    *loss_sum = sum;
    *count = static_cast<int64_t>(rows);
  }
}

}  // namespace

template <typename T>
absl::Status SoftmaxCrossEntropy(T* dlogits, float* row_loss, const T* logits, const int32_t* targets, int64_t n,
                                 int64_t v, float scale, int32_t ignore_index, cudaStream_t stream, int64_t stride) {
  constexpr const char* kFn = "SoftmaxCrossEntropy";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::Positive(kFn, "v", v));
  if (stride == 0) stride = v;
  if (stride < v) {
    return absl::InvalidArgumentError(absl::StrCat("SoftmaxCrossEntropy: stride = ", stride, " is less than v = ", v));
  }
  if (n == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "logits", logits));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "targets", targets));
  if (n > INT32_MAX) {
    return absl::InvalidArgumentError("SoftmaxCrossEntropy: n exceeds the grid (2^31 - 1 rows)");
  }
  const bool vec = stride % internal::kPackWidth<T> == 0 && internal::Aligned16(logits) &&
                   (dlogits == nullptr || internal::Aligned16(dlogits));
  internal::LaunchKernel(SoftmaxXentKernel<T>, static_cast<unsigned>(n), kThreads, 0, stream, dlogits, row_loss, logits,
                         targets, v, stride, vec, scale, ignore_index);
  return LaunchStatus("SoftmaxXentKernel");
}

absl::Status XentLossSum(double* loss_sum, int64_t* count, const float* row_loss, const int32_t* targets, int64_t n,
                         int32_t ignore_index, cudaStream_t stream) {
  constexpr const char* kFn = "XentLossSum";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "n", n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "loss_sum", loss_sum));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "count", count));
  if (n > 0) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "row_loss", row_loss));
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "targets", targets));
  }
  internal::LaunchKernel(XentLossSumKernel, 1, kSumThreads, 0, stream, loss_sum, count, row_loss, targets, n,
                         ignore_index);
  return LaunchStatus("XentLossSumKernel");
}

template absl::Status SoftmaxCrossEntropy<float>(float*, float*, const float*, const int32_t*, int64_t, int64_t, float,
                                                 int32_t, cudaStream_t, int64_t);
template absl::Status SoftmaxCrossEntropy<bf16>(bf16*, float*, const bf16*, const int32_t*, int64_t, int64_t, float,
                                                int32_t, cudaStream_t, int64_t);

}  // namespace gradsync::kernels::cuda
