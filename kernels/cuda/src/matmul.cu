// The linear layer's products (math and layout in matmul.cuh) through the GEMM engine
// (gemm_engine.cuh), plus the small kernels it needs: bias rows for the cases the epilogue cannot
// take, the dbias column sum, and the sum of a split dweight's partial products.
#include "gradsync/kernels/cuda/matmul.cuh"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "column_reduce.cuh"
#include "common.cuh"
#include "gemm_engine.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::Gemm;
using internal::RunGemm;

template <typename T>
constexpr cudaDataType_t kDataType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;

// out[r, o] = bias[o], or 0 without a bias: the start value of the product with beta = 1.
template <typename T>
__global__ void BiasRowsKernel(T* out, const T* bias, int64_t n, int64_t oc, int64_t stride) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * oc) return;
  out[idx / oc * stride + idx % oc] = bias != nullptr ? bias[idx % oc] : internal::FromFloat<T>(0.0f);
}

template <typename T>
struct DoutColumn {
  const T* dout;
  int64_t stride;
  __device__ void operator()(int64_t row, int64_t col, float (&acc)[1]) const {
    acc[0] += internal::ToFloat(dout[row * stride + col]);
  }
};

absl::Status CheckDevice(const MatmulContext& ctx, const char* fn) {
  int device = -1;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  if (device == ctx.device()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(fn, ": the current device is ", device, " but the MatmulContext belongs to ", ctx.device()));
}

absl::Status CheckSizes(const char* fn, int64_t n, int64_t in_features, int64_t out_features) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "n", n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "in_features", in_features));
  return internal::NonNegative(fn, "out_features", out_features);
}

// dweight[i] += sum over s of partial[s][i], s ascending (fp32, one rounding to T).
template <typename T>
__global__ void AddPartialsKernel(T* out, const float* partial, int splits, int64_t count) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= count) return;
  float sum = internal::ToFloat(out[idx]);
  for (int s = 0; s < splits; ++s) sum += partial[s * count + idx];
  out[idx] = internal::FromFloat<T>(sum);
}

// How many row chunks a dweight [in, out] over n rows splits into: 1 unless its 128 x 128 output
// tiles number fewer than 64 (half an H100) and n is long enough to cut into chunks of at least
// 2048 rows, each a multiple of 64.
int DweightSplits(int64_t in_features, int64_t out_features, int64_t n) {
  const int64_t tiles = CeilDiv(in_features, 128) * CeilDiv(out_features, 128);
  if (tiles >= 64) return 1;
  for (const int splits : {8, 4, 2}) {
    if (n % (splits * 64) == 0 && n / splits >= 2048) return splits;
  }
  return 1;
}

// A row stride of 0 means packed rows; otherwise it must hold a whole row.
absl::Status CheckStride(const char* fn, const char* name, int64_t* stride, int64_t out_features) {
  if (*stride == 0) *stride = out_features;
  if (*stride < out_features) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": ", name, " = ", *stride, " is less than out_features = ", out_features));
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status MatmulForward(MatmulContext& ctx, T* out, const T* inp, const T* weight, const T* bias, int64_t n,
                           int64_t in_features, int64_t out_features, cudaStream_t stream, int64_t out_stride) {
  constexpr const char* kFn = "MatmulForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckSizes(kFn, n, in_features, out_features));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckStride(kFn, "out_stride", &out_stride, out_features));
  if (n == 0 || out_features == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckDevice(ctx, kFn));
  // Bias rows written here and a product with beta = 1 (the CPU reference's way) stand in for
  // the bias epilogue where it cannot serve: an empty product (cuBLASLt rejects k = 0), a bias
  // the epilogue's vector loads cannot read (not 16-byte aligned), or no epilogue algorithm.
  const auto bias_rows = [&]() -> absl::Status {
    constexpr int kThreads = 256;
    internal::LaunchKernel(BiasRowsKernel<T>, static_cast<unsigned>(CeilDiv(n * out_features, kThreads)), kThreads, 0,
                           stream, out, bias, n, out_features, out_stride);
    return LaunchStatus("BiasRowsKernel");
  };
  if (in_features == 0) return bias_rows();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
  Gemm gemm{.what = "MatmulForward",
            .m = out_features,
            .n = n,
            .k = in_features,
            .a = weight,
            .trans_a = true,
            .lda = in_features,
            .b = inp,
            .trans_b = false,
            .ldb = in_features,
            .d = out,
            .ldd = out_stride,
            .beta = 0.0f,
            .bias = bias};
  if (bias != nullptr && internal::Aligned16(bias)) {
    const absl::Status fused = RunGemm(ctx, kDataType<T>, gemm, stream);
    if (!absl::IsNotFound(fused)) return fused;
  }
  if (bias != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(bias_rows());
    gemm.beta = 1.0f;
    gemm.bias = nullptr;
  }
  return RunGemm(ctx, kDataType<T>, gemm, stream);
}

template <typename T>
absl::Status MatmulBackward(MatmulContext& ctx, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp,
                            const T* weight, int64_t n, int64_t in_features, int64_t out_features, cudaStream_t stream,
                            int64_t dout_stride, GradMode dinp_mode) {
  constexpr const char* kFn = "MatmulBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckSizes(kFn, n, in_features, out_features));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckStride(kFn, "dout_stride", &dout_stride, out_features));
  if (n == 0) return absl::OkStatus();
  if (out_features == 0) {
    // Sums over no outputs: an overwritten dinp is zero, the rest keeps its value.
    if (dinp == nullptr || dinp_mode == GradMode::kAccumulate) return absl::OkStatus();
    return CudaStatus(cudaMemsetAsync(dinp, 0, static_cast<size_t>(n * in_features) * sizeof(T), stream),
                      "MatmulBackward: cudaMemsetAsync of dinp");
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckDevice(ctx, kFn));
  if (dbias != nullptr) {
    // The partial sums borrow the workspace; the products below use it only after them, in
    // stream order.
    internal::ColumnOutputs<T, 1> outputs{{dbias}};
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::LaunchColumnReduce<1, T>(
        "dbias", DoutColumn<T>{dout, dout_stride}, n, out_features, static_cast<float*>(ctx.workspace()),
        static_cast<int64_t>(ctx.workspace_bytes() / sizeof(float)), outputs, stream));
  }
  if (in_features == 0) return absl::OkStatus();
  if (dinp != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
    const Gemm gemm{.what = "MatmulBackward (dinp)",
                    .m = in_features,
                    .n = n,
                    .k = out_features,
                    .a = weight,
                    .trans_a = false,
                    .lda = in_features,
                    .b = dout,
                    .trans_b = false,
                    .ldb = dout_stride,
                    .d = dinp,
                    .ldd = in_features,
                    .beta = dinp_mode == GradMode::kOverwrite ? 0.0f : 1.0f,
                    .bias = nullptr};
    GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
  }
  if (dweight != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
    const int splits = DweightSplits(in_features, out_features, n);
    if (splits == 1) {
      const Gemm gemm{.what = "MatmulBackward (dweight)",
                      .m = in_features,
                      .n = out_features,
                      .k = n,
                      .a = inp,
                      .trans_a = false,
                      .lda = in_features,
                      .b = dout,
                      .trans_b = true,
                      .ldb = dout_stride,
                      .d = dweight,
                      .ldd = in_features,
                      .beta = 1.0f,
                      .bias = nullptr};
      GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
    } else {
      const int64_t chunk = n / splits, count = in_features * out_features;
      absl::StatusOr<void*> partial = ctx.Scratch(static_cast<size_t>(splits * count) * sizeof(float));
      if (!partial.ok()) return partial.status();
      Gemm gemm{.what = "MatmulBackward (dweight, split)",
                .m = in_features,
                .n = out_features,
                .k = chunk,
                .a = inp,
                .trans_a = false,
                .lda = in_features,
                .b = dout,
                .trans_b = true,
                .ldb = dout_stride,
                .d = *partial,
                .ldd = in_features,
                .beta = 0.0f,
                .bias = nullptr};
      gemm.batch = splits;
      gemm.stride_a = chunk * in_features;
      gemm.stride_b = chunk * dout_stride;
      gemm.stride_d = count;
      gemm.d_fp32 = true;
      GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
      constexpr int kThreads = 256;
      internal::LaunchKernel(AddPartialsKernel<T>, static_cast<unsigned>(CeilDiv(count, kThreads)), kThreads, 0, stream,
                             dweight, static_cast<const float*>(*partial), splits, count);
      GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("AddPartialsKernel"));
    }
  }
  return absl::OkStatus();
}

template absl::Status MatmulForward<float>(MatmulContext&, float*, const float*, const float*, const float*, int64_t,
                                           int64_t, int64_t, cudaStream_t, int64_t);
template absl::Status MatmulForward<bf16>(MatmulContext&, bf16*, const bf16*, const bf16*, const bf16*, int64_t,
                                          int64_t, int64_t, cudaStream_t, int64_t);
template absl::Status MatmulBackward<float>(MatmulContext&, float*, float*, float*, const float*, const float*,
                                            const float*, int64_t, int64_t, int64_t, cudaStream_t, int64_t, GradMode);
template absl::Status MatmulBackward<bf16>(MatmulContext&, bf16*, bf16*, bf16*, const bf16*, const bf16*, const bf16*,
                                           int64_t, int64_t, int64_t, cudaStream_t, int64_t, GradMode);

}  // namespace gradsync::kernels::cuda
