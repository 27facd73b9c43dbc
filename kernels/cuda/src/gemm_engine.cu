// The GEMM engine under the linear layer (matmul.cu) and the batched attention products
// (attention_gemm.cu): MatmulContext's handle, workspace and scratch, and RunGemm, which plans
// each kind of cuBLASLt product once (descriptors and the heuristic's algorithm) and runs it.
// Interface in gemm_engine.cuh; host code only.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gemm_engine.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/matmul.cuh"

namespace gradsync::kernels::cuda {
namespace {

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
using OpDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDestroy<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using Layout =
    std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDestroy<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using Pref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t,
                             LtDestroy<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

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
    std::fprintf(
        stderr,
        "gemm %-28s m=%ld n=%ld k=%ld x%ld %c%c lda=%ld ldb=%ld ldd=%ld align=%u/%u/%u%s %9.1f us %7.1f TFLOP/s\n",
        g.what, static_cast<long>(g.m), static_cast<long>(g.n), static_cast<long>(g.k), static_cast<long>(g.batch),
        g.trans_a ? 'T' : 'N', g.trans_b ? 'T' : 'N', static_cast<long>(g.lda), static_cast<long>(g.ldb),
        static_cast<long>(g.ldd), align_a, align_b, align_d, g.bias != nullptr ? " bias" : "", ms * 1e3,
        flop / (ms * 1e-3) / 1e12);
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
  const cublasComputeType_t compute =
      (type == CUDA_R_32F && ctx.allow_tf32()) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t raw_op = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulDescCreate(&raw_op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate"));
  plan->op.reset(raw_op);
  const cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatmulDescSetAttribute(raw_op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "set TRANSA"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatmulDescSetAttribute(raw_op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "set TRANSB"));
  if (g.bias != nullptr) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t bias_type = type;
    GRADSYNC_CUDA_RETURN_IF_ERROR(
        lt(cublasLtMatmulDescSetAttribute(raw_op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
           "set EPILOGUE"));
    GRADSYNC_CUDA_RETURN_IF_ERROR(
        lt(cublasLtMatmulDescSetAttribute(raw_op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)),
           "set BIAS_POINTER"));
    GRADSYNC_CUDA_RETURN_IF_ERROR(
        lt(cublasLtMatmulDescSetAttribute(raw_op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)),
           "set BIAS_DATA_TYPE"));
  }

  cublasLtMatrixLayout_t raw_a = nullptr, raw_b = nullptr, raw_d = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatrixLayoutCreate(&raw_a, type, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda), "layout A"));
  plan->la.reset(raw_a);
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatrixLayoutCreate(&raw_b, type, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb), "layout B"));
  plan->lb.reset(raw_b);
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatrixLayoutCreate(&raw_d, g.d_fp32 ? CUDA_R_32F : type, g.m, g.n, g.ldd), "layout D"));
  plan->ld.reset(raw_d);
  if (g.batch > 1) {
    const int32_t count = static_cast<int32_t>(g.batch);
    for (auto [layout, stride] :
         {std::pair{raw_a, g.stride_a}, std::pair{raw_b, g.stride_b}, std::pair{raw_d, g.stride_d}}) {
      GRADSYNC_CUDA_RETURN_IF_ERROR(
          lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
             "set BATCH_COUNT"));
      GRADSYNC_CUDA_RETURN_IF_ERROR(
          lt(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                              sizeof(stride)),
             "set STRIDED_BATCH_OFFSET"));
    }
  }

  cublasLtMatmulPreference_t raw_pref = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(lt(cublasLtMatmulPreferenceCreate(&raw_pref), "cublasLtMatmulPreferenceCreate"));
  Pref pref(raw_pref);
  const uint64_t workspace = ctx.workspace_bytes();
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      lt(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                              sizeof(workspace)),
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
  const cublasStatus_t searched =
      cublasLtMatmulAlgoGetHeuristic(ctx.handle(), raw_op, raw_a, raw_b, raw_d, raw_d, raw_pref, 1, &heuristic, &found);
  if (searched == CUBLAS_STATUS_NOT_SUPPORTED || (searched == CUBLAS_STATUS_SUCCESS && found == 0)) {
    return absl::NotFoundError(absl::StrCat(g.what, ": cuBLASLt has no algorithm for m=", g.m, " n=", g.n, " k=", g.k,
                                            g.batch > 1 ? absl::StrCat(" x", g.batch) : "",
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
  const std::string key =
      absl::StrCat(static_cast<int>(type), ",", g.m, ",", g.n, ",", g.k, ",", g.trans_a, g.trans_b, ",", g.lda, ",",
                   g.ldb, ",", g.ldd, ",", g.batch, ",", g.stride_a, ",", g.stride_b, ",", g.stride_d, ",", g.d_fp32,
                   g.bias != nullptr, ",", align_a, ",", align_b, ",", align_d);
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
                     plan->ld.get(), g.d, plan->ld.get(), &plan->algo, ctx.workspace(), ctx.workspace_bytes(), stream),
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
    absl::Status status =
        CudaStatus(cudaMalloc(&workspace, options.workspace_bytes), "cudaMalloc of the cuBLASLt workspace");
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

}  // namespace gradsync::kernels::cuda
