// cuBLASLt products of the linear layer (math and layout in matmul.cuh), plus the two small
// kernels it needs: bias rows for the cases the epilogue cannot take, and the dbias column sum.
#include "gradsync/kernels/cuda/matmul.cuh"

#include <type_traits>

#include "absl/strings/str_cat.h"
#include "column_reduce.cuh"
#include "common.cuh"
#include "gemm.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::Gemm;
using internal::RunGemm;

template <typename T>
constexpr cudaDataType_t kDataType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;

// The largest power of two (up to 256, what cuBLASLt assumes by default) that divides the
// address. cuBLASLt's heuristic only offers kernels whose vector loads this alignment allows, so
// weights sliced out of a flat parameter buffer at any offset stay legal.
uint32_t AlignmentOf(const void* ptr) {
  const auto addr = reinterpret_cast<uintptr_t>(ptr);
  uint32_t align = 256;
  while (align > 1 && addr % align != 0) align /= 2;
  return align;
}

template <typename Handle, auto kDestroy>
struct LtDestroy {
  void operator()(Handle h) const { kDestroy(h); }
};
using OpDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t,
                               LtDestroy<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t,
                               LtDestroy<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using Pref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t,
                             LtDestroy<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

// out[r, o] = bias[o], or 0 without a bias: the start value of the product with beta = 1.
template <typename T>
__global__ void BiasRowsKernel(T* out, const T* bias, int64_t n, int64_t oc) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * oc) return;
  out[idx] = bias != nullptr ? bias[idx % oc] : internal::FromFloat<T>(0.0f);
}

template <typename T>
struct DoutColumn {
  const T* dout;
  int64_t cols;
  __device__ void operator()(int64_t row, int64_t col, float (&acc)[1]) const {
    acc[0] += internal::ToFloat(dout[row * cols + col]);
  }
};

absl::Status CheckDevice(const MatmulContext& ctx, const char* fn) {
  int device = -1;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  if (device == ctx.device()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      fn, ": the current device is ", device, " but the MatmulContext belongs to ", ctx.device()));
}

absl::Status CheckSizes(const char* fn, int64_t n, int64_t in_features, int64_t out_features) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "n", n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "in_features", in_features));
  return internal::NonNegative(fn, "out_features", out_features);
}

}  // namespace

namespace internal {

absl::Status RunGemm(MatmulContext& ctx, cudaDataType_t type, const Gemm& g, cudaStream_t stream) {
  const auto lt = [&g](cublasStatus_t status, const char* call) {
    return CublasStatus(status, absl::StrCat(g.what, ": ", call));
  };
  const cublasComputeType_t compute = (type == CUDA_R_32F && ctx.allow_tf32())
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t raw_op = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatmulDescCreate(&raw_op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  OpDesc op(raw_op);
  const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
      op.get(), CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "set TRANSA"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
      op.get(), CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "set TRANSB"));
  if (g.bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = type;
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
        op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)), "set EPILOGUE"));
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
        op.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)), "set BIAS_POINTER"));
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
        op.get(), CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)),
        "set BIAS_DATA_TYPE"));
  }

  cublasLtMatrixLayout_t raw_a = nullptr, raw_b = nullptr, raw_d = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatrixLayoutCreate(&raw_a, type, g.trans_a ? g.k : g.m,
                                                              g.trans_a ? g.m : g.k, g.lda),
                                   "layout A"));
  Layout la(raw_a);
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatrixLayoutCreate(&raw_b, type, g.trans_b ? g.n : g.k,
                                                              g.trans_b ? g.k : g.n, g.ldb),
                                   "layout B"));
  Layout lb(raw_b);
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(
      cublasLtMatrixLayoutCreate(&raw_d, g.d_fp32 ? CUDA_R_32F : type, g.m, g.n, g.ldd), "layout D"));
  Layout ld(raw_d);
  if (g.batch > 1) {
    const int32_t count = static_cast<int32_t>(g.batch);
    for (auto [layout, stride] : {std::pair{la.get(), g.stride_a}, std::pair{lb.get(), g.stride_b},
                                  std::pair{ld.get(), g.stride_d}}) {
      GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), "set BATCH_COUNT"));
      GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
          "set STRIDED_BATCH_OFFSET"));
    }
  }

  cublasLtMatmulPreference_t raw_pref = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate"));
  Pref pref(raw_pref);
  const uint64_t workspace = ctx.workspace_bytes();
  const uint32_t align_a = AlignmentOf(g.a), align_b = AlignmentOf(g.b), align_d = AlignmentOf(g.d);
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)),
      "set MAX_WORKSPACE_BYTES"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)),
      "set MIN_ALIGNMENT_A_BYTES"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)),
      "set MIN_ALIGNMENT_B_BYTES"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d)),
      "set MIN_ALIGNMENT_C_BYTES"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(
      pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)),
      "set MIN_ALIGNMENT_D_BYTES"));

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t searched =
      cublasLtMatmulAlgoGetHeuristic(ctx.handle(), op.get(), la.get(), lb.get(), ld.get(),
                                     ld.get(), pref.get(), 1, &heuristic, &found);
  if (searched == CUBLAS_STATUS_NOT_SUPPORTED || (searched == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return absl::NotFoundError(absl::StrCat(g.what, ": cuBLASLt has no algorithm for m=", g.m,
                                            " n=", g.n, " k=", g.k, g.batch > 1 ? absl::StrCat(" x", g.batch) : "",
                                            g.bias != nullptr ? " with the bias epilogue" : ""));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(searched, "cublasLtMatmulAlgoGetHeuristic"));
  const float alpha = g.alpha;
  return lt(cublasLtMatmul(ctx.handle(), op.get(), &alpha, g.a, la.get(), g.b, lb.get(), &g.beta,
                           g.d, ld.get(), g.d, ld.get(), &heuristic.algo, ctx.workspace(),
                           ctx.workspace_bytes(), stream),
            "cublasLtMatmul");
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<MatmulContext>> MatmulContext::Create(Options options) {
  int device = -1;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  cublasLtHandle_t handle = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CublasStatus(cublasLtCreate(&handle), "cublasLtCreate"));
  void* workspace = nullptr;
  if (options.workspace_bytes > 0) {
    absl::Status status = CudaStatus(cudaMalloc(&workspace, options.workspace_bytes),
                                     "cudaMalloc of the cuBLASLt workspace");
    if (!status.ok()) {
      cublasLtDestroy(handle);
      return status;
    }
  }
  return std::unique_ptr<MatmulContext>(new MatmulContext(options, device, handle, workspace));
}

MatmulContext::~MatmulContext() {
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

template <typename T>
absl::Status MatmulForward(MatmulContext& ctx, T* out, const T* inp, const T* weight,
                           const T* bias, int64_t n, int64_t in_features, int64_t out_features,
                           cudaStream_t stream) {
  constexpr const char* kFn = "MatmulForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckSizes(kFn, n, in_features, out_features));
  if (n == 0 || out_features == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckDevice(ctx, kFn));
  // Bias rows written here and a product with beta = 1 (the CPU reference's way) stand in for
  // the bias epilogue where it cannot serve: an empty product (cuBLASLt rejects k = 0), a bias
  // the epilogue's vector loads cannot read (not 16-byte aligned), or no epilogue algorithm.
  const auto bias_rows = [&]() -> absl::Status {
    constexpr int kThreads = 256;
    BiasRowsKernel<<<static_cast<unsigned>(CeilDiv(n * out_features, kThreads)), kThreads, 0,
                     stream>>>(out, bias, n, out_features);
    return LaunchStatus("BiasRowsKernel");
  };
  if (in_features == 0) return bias_rows();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
  Gemm gemm{"MatmulForward", out_features, n, in_features, weight, true, in_features,
            inp, false, in_features, out, out_features, 0.0f, bias};
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
absl::Status MatmulBackward(MatmulContext& ctx, T* dinp, T* dweight, T* dbias, const T* dout,
                            const T* inp, const T* weight, int64_t n, int64_t in_features,
                            int64_t out_features, cudaStream_t stream) {
  constexpr const char* kFn = "MatmulBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckSizes(kFn, n, in_features, out_features));
  if (n == 0 || out_features == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckDevice(ctx, kFn));
  if (dbias != nullptr) {
    // The partial sums borrow the workspace; the products below use it only after them, in
    // stream order.
    internal::ColumnOutputs<T, 1> outputs{{dbias}};
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::LaunchColumnReduce<1, T>(
        "dbias", DoutColumn<T>{dout, out_features}, n, out_features,
        static_cast<float*>(ctx.workspace()),
        static_cast<int64_t>(ctx.workspace_bytes() / sizeof(float)), outputs, stream));
  }
  if (in_features == 0) return absl::OkStatus();
  if (dinp != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
    const Gemm gemm{"MatmulBackward (dinp)", in_features, n, out_features, weight, false,
                    in_features, dout, false, out_features, dinp, in_features, 1.0f, nullptr};
    GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
  }
  if (dweight != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
    const Gemm gemm{"MatmulBackward (dweight)", in_features, out_features, n, inp, false,
                    in_features, dout, true, out_features, dweight, in_features, 1.0f, nullptr};
    GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
  }
  return absl::OkStatus();
}

template absl::Status MatmulForward<float>(MatmulContext&, float*, const float*, const float*,
                                           const float*, int64_t, int64_t, int64_t, cudaStream_t);
template absl::Status MatmulForward<bf16>(MatmulContext&, bf16*, const bf16*, const bf16*,
                                          const bf16*, int64_t, int64_t, int64_t, cudaStream_t);
template absl::Status MatmulBackward<float>(MatmulContext&, float*, float*, float*, const float*,
                                            const float*, const float*, int64_t, int64_t, int64_t,
                                            cudaStream_t);
template absl::Status MatmulBackward<bf16>(MatmulContext&, bf16*, bf16*, bf16*, const bf16*,
                                           const bf16*, const bf16*, int64_t, int64_t, int64_t,
                                           cudaStream_t);

}  // namespace gradsync::kernels::cuda
