// cuBLASLt products of the linear layer (math and layout in matmul.cuh), plus the two small
// kernels it needs: bias rows for the cases the epilogue cannot take, and the dbias column sum.
#include "gradsync/kernels/cuda/matmul.cuh"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

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
  return absl::FailedPreconditionError(absl::StrCat(
      fn, ": the current device is ", device, " but the MatmulContext belongs to ", ctx.device()));
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

// GRADSYNC_GEMM_TRACE=1 prints every product's shape, operand alignments and time on the device
// to stderr, to find the products cuBLASLt runs slowly. It synchronises after each product: a
// diagnostic, never for a run whose speed matters.
class GemmTimer {
 public:
  explicit GemmTimer(cudaStream_t stream) : stream_(stream) {
    static const bool enabled = std::getenv("GRADSYNC_GEMM_TRACE") != nullptr;
    if (!enabled || cudaEventCreate(&begin_) != cudaSuccess || cudaEventCreate(&end_) != cudaSuccess) return;
    on_ = cudaEventRecord(begin_, stream_) == cudaSuccess;
  }
  ~GemmTimer() {
    if (begin_ != nullptr) cudaEventDestroy(begin_);
    if (end_ != nullptr) cudaEventDestroy(end_);
  }
  void Report(const internal::Gemm& g, uint32_t align_a, uint32_t align_b, uint32_t align_d) {
    float ms = 0.0f;
    if (!on_ || cudaEventRecord(end_, stream_) != cudaSuccess || cudaEventSynchronize(end_) != cudaSuccess ||
        cudaEventElapsedTime(&ms, begin_, end_) != cudaSuccess) {
      return;
    }
    const double flop = 2.0 * static_cast<double>(g.m) * g.n * g.k * g.batch;
    std::fprintf(stderr, "gemm %-28s m=%ld n=%ld k=%ld x%ld %c%c lda=%ld ldb=%ld ldd=%ld align=%u/%u/%u%s %9.1f us %7.1f TFLOP/s\n",
                 g.what, static_cast<long>(g.m), static_cast<long>(g.n), static_cast<long>(g.k),
                 static_cast<long>(g.batch), g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', static_cast<long>(g.lda),
                 static_cast<long>(g.ldb), static_cast<long>(g.ldd), align_a, align_b, align_d,
                 g.bias != nullptr ? " bias" : "", ms * 1e3, flop / (ms * 1e-3) / 1e12);
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
  bool on_ = false;
};

}  // namespace

namespace internal {

// Everything cuBLASLt needs for one kind of product, found once: the descriptors and the
// heuristic's algorithm. The model issues the same few dozen kinds every step, over a thousand
// products in all (the attention's per-sequence calls), and the heuristic query would otherwise
// cost more host time than many of them take on the GPU.
struct GemmPlan {
  OpDesc op;
  Layout la, lb, ld;
  cublasLtMatmulAlgo_t algo;
};

absl::StatusOr<std::unique_ptr<GemmPlan>> MakePlan(MatmulContext& ctx, cudaDataType_t type, const Gemm& g,
                                                   uint32_t align_a, uint32_t align_b, uint32_t align_d) {
  const auto lt = [&g](cublasStatus_t status, const char* call) {
    return CublasStatus(status, absl::StrCat(g.what, ": ", call));
  };
  auto plan = std::make_unique<GemmPlan>();
  const cublasComputeType_t compute = (type == CUDA_R_32F && ctx.allow_tf32())
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t raw_op = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatmulDescCreate(&raw_op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  plan->op.reset(raw_op);
  const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
      raw_op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "set TRANSA"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
      raw_op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "set TRANSB"));
  if (g.bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = type;
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
        raw_op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)), "set EPILOGUE"));
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
        raw_op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)), "set BIAS_POINTER"));
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescSetAttribute(
        raw_op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)),
        "set BIAS_DATA_TYPE"));
  }

  cublasLtMatrixLayout_t raw_a = nullptr, raw_b = nullptr, raw_d = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatrixLayoutCreate(&raw_a, type, g.trans_a ? g.k : g.m,
                                                              g.trans_a ? g.m : g.k, g.lda),
                                   "layout A"));
  plan->la.reset(raw_a);
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatrixLayoutCreate(&raw_b, type, g.trans_b ? g.n : g.k,
                                                              g.trans_b ? g.k : g.n, g.ldb),
                                   "layout B"));
  plan->lb.reset(raw_b);
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(
      cublasLtMatrixLayoutCreate(&raw_d, g.d_fp32 ? CUDA_R_32F : type, g.m, g.n, g.ldd), "layout D"));
  plan->ld.reset(raw_d);
  if (g.batch > 1) {
    const int32_t count = static_cast<int32_t>(g.batch);
    for (auto [layout, stride] : {std::pair{raw_a, g.stride_a}, std::pair{raw_b, g.stride_b},
                                  std::pair{raw_d, g.stride_d}}) {
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
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(
      raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)),
      "set MAX_WORKSPACE_BYTES"));
  for (auto [attr, align, name] : {std::tuple{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a, "A"},
                                   std::tuple{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b, "B"},
                                   std::tuple{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d, "C"},
                                   std::tuple{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d, "D"}}) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceSetAttribute(raw_pref, attr, &align, sizeof(align)),
                                     absl::StrCat("set MIN_ALIGNMENT_", name, "_BYTES").c_str()));
  }

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t searched = cublasLtMatmulAlgoGetHeuristic(ctx.handle(), raw_op, raw_a, raw_b, raw_d, raw_d,
                                                                 raw_pref, 1, &heuristic, &found);
  if (searched == CUBLAS_STATUS_NOT_SUPPORTED || (searched == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return absl::NotFoundError(absl::StrCat(g.what, ": cuBLASLt has no algorithm for m=", g.m,
                                            " n=", g.n, " k=", g.k, g.batch > 1 ? absl::StrCat(" x", g.batch) : "",
                                            g.bias != nullptr ? " with the bias epilogue" : ""));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(searched, "cublasLtMatmulAlgoGetHeuristic"));
  plan->algo = heuristic.algo;
  return plan;
}

// The plans by key, for the context's lifetime. A mutex keeps concurrent callers safe; a context
// is meant for one stream at a time anyway.
class GemmPlanCache {
 public:
  GemmPlan* Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    return it == plans_.end() ? nullptr : it->second.get();
  }
  GemmPlan* Insert(std::string key, std::unique_ptr<GemmPlan> plan) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = plans_.try_emplace(std::move(key), std::move(plan));
    return it->second.get();
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<GemmPlan>> plans_;  // guarded by mu_
};

absl::Status RunGemm(MatmulContext& ctx, cudaDataType_t type, const Gemm& g, cudaStream_t stream) {
  const uint32_t align_a = AlignmentOf(g.a), align_b = AlignmentOf(g.b), align_d = AlignmentOf(g.d);
  // Everything that shapes the descriptors or the heuristic's choice; not the pointers themselves
  // (the bias pointer is set on each call).
  const std::string key = absl::StrCat(
      static_cast<int>(type), ",", g.m, ",", g.n, ",", g.k, ",", g.trans_a, g.trans_b, ",", g.lda, ",", g.ldb, ",",
      g.ldd, ",", g.batch, ",", g.stride_a, ",", g.stride_b, ",", g.stride_d, ",", g.d_fp32, g.bias != nullptr, ",",
      align_a, ",", align_b, ",", align_d);
  GemmPlan* plan = ctx.plans().Find(key);
  if (plan == nullptr) {
    absl::StatusOr<std::unique_ptr<GemmPlan>> made = MakePlan(ctx, type, g, align_a, align_b, align_d);
    if (!made.ok()) return made.status();
    plan = ctx.plans().Insert(key, *std::move(made));
  }
  if (g.bias != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(CublasStatus(
        cublasLtMatmulDescSetAttribute(plan->op.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)),
        absl::StrCat(g.what, ": set BIAS_POINTER")));
  }
  const float alpha = g.alpha;
  GemmTimer timer(stream);
  const absl::Status run = CublasStatus(
      cublasLtMatmul(ctx.handle(), plan->op.get(), &alpha, g.a, plan->la.get(), g.b, plan->lb.get(), &g.beta, g.d,
                     plan->ld.get(), g.d, plan->ld.get(), &plan->algo, ctx.workspace(), ctx.workspace_bytes(),
                     stream),
      absl::StrCat(g.what, ": cublasLtMatmul"));
  timer.Report(g, align_a, align_b, align_d);
  return run;
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

MatmulContext::MatmulContext(Options options, int device, cublasLtHandle_t handle, void* workspace)
    : options_(options),
      device_(device),
      handle_(handle),
      workspace_(workspace),
      plans_(std::make_unique<internal::GemmPlanCache>()) {}

absl::StatusOr<void*> MatmulContext::Scratch(size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  if (scratch_ != nullptr) cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&scratch_, bytes), "cudaMalloc of the matmul scratch"));
  scratch_bytes_ = bytes;
  return scratch_;
}

MatmulContext::~MatmulContext() {
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

template <typename T>
absl::Status MatmulForward(MatmulContext& ctx, T* out, const T* inp, const T* weight,
                           const T* bias, int64_t n, int64_t in_features, int64_t out_features,
                           cudaStream_t stream, int64_t out_stride) {
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
    BiasRowsKernel<<<static_cast<unsigned>(CeilDiv(n * out_features, kThreads)), kThreads, 0,
                     stream>>>(out, bias, n, out_features, out_stride);
    return LaunchStatus("BiasRowsKernel");
  };
  if (in_features == 0) return bias_rows();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
  Gemm gemm{"MatmulForward", out_features, n, in_features, weight, true, in_features,
            inp, false, in_features, out, out_stride, 0.0f, bias};
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
                            int64_t out_features, cudaStream_t stream, int64_t dout_stride,
                            GradMode dinp_mode) {
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
        "dbias", DoutColumn<T>{dout, dout_stride}, n, out_features,
        static_cast<float*>(ctx.workspace()),
        static_cast<int64_t>(ctx.workspace_bytes() / sizeof(float)), outputs, stream));
  }
  if (in_features == 0) return absl::OkStatus();
  if (dinp != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "weight", weight));
    const Gemm gemm{"MatmulBackward (dinp)", in_features, n, out_features, weight, false,
                    in_features, dout, false, dout_stride, dinp, in_features,
                    dinp_mode == GradMode::kOverwrite ? 0.0f : 1.0f, nullptr};
    GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
  }
  if (dweight != nullptr) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "inp", inp));
    const int splits = DweightSplits(in_features, out_features, n);
    if (splits == 1) {
      const Gemm gemm{"MatmulBackward (dweight)", in_features, out_features, n, inp, false,
                      in_features, dout, true, dout_stride, dweight, in_features, 1.0f, nullptr};
      GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
    } else {
      const int64_t chunk = n / splits, count = in_features * out_features;
      absl::StatusOr<void*> partial = ctx.Scratch(static_cast<size_t>(splits * count) * sizeof(float));
      if (!partial.ok()) return partial.status();
      Gemm gemm{"MatmulBackward (dweight, split)", in_features, out_features, chunk, inp, false,
                in_features, dout, true, dout_stride, *partial, in_features, 0.0f, nullptr};
      gemm.batch = splits;
      gemm.stride_a = chunk * in_features;
      gemm.stride_b = chunk * dout_stride;
      gemm.stride_d = count;
      gemm.d_fp32 = true;
      GRADSYNC_CUDA_RETURN_IF_ERROR(RunGemm(ctx, kDataType<T>, gemm, stream));
      constexpr int kThreads = 256;
      AddPartialsKernel<T><<<static_cast<unsigned>(CeilDiv(count, kThreads)), kThreads, 0, stream>>>(
          dweight, static_cast<const float*>(*partial), splits, count);
      GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("AddPartialsKernel"));
    }
  }
  return absl::OkStatus();
}

template absl::Status MatmulForward<float>(MatmulContext&, float*, const float*, const float*,
                                           const float*, int64_t, int64_t, int64_t, cudaStream_t, int64_t);
template absl::Status MatmulForward<bf16>(MatmulContext&, bf16*, const bf16*, const bf16*,
                                          const bf16*, int64_t, int64_t, int64_t, cudaStream_t, int64_t);
template absl::Status MatmulBackward<float>(MatmulContext&, float*, float*, float*, const float*,
                                            const float*, const float*, int64_t, int64_t, int64_t,
                                            cudaStream_t, int64_t, GradMode);
template absl::Status MatmulBackward<bf16>(MatmulContext&, bf16*, bf16*, bf16*, const bf16*,
                                           const bf16*, const bf16*, int64_t, int64_t, int64_t,
                                           cudaStream_t, int64_t, GradMode);

}  // namespace gradsync::kernels::cuda
