// The GEMM engine (kernels/cuda/src/gemm_engine.cuh) on the host, for the emulated kernel
// library: RunGemm computes what the cuBLASLt product it describes computes, in column-major
// terms as cuBLASLt reads them, and MatmulContext keeps its scratch in emulated device memory.
//
// Each element of D is alpha sum_k op(A)[i, k] op(B)[k, j] summed in fp32 in k order, then
// + beta D[i, j] (D is not read when beta is 0, as cuBLASLt promises, so an overwrite of a NaN
// buffer stays clean), then + bias[i], rounded once into D's type. TF32 products round their
// inputs to 10 mantissa bits first. The layouts are checked as cuBLASLt checks them (a leading
// dimension below the rows it must hold is refused), so a product described wrongly fails here
// as it would on the GPU, rather than reading the wrong elements.
#include <cuda_bf16.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gemm_engine.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/matmul.cuh"

namespace gradsync::kernels::cuda {
namespace internal {

class GemmPlanCache {};

namespace {

float Tf32(float x) {
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits = (bits + 0x1000u) & ~0x1fffu;  // round the 23-bit mantissa to 10 bits, to nearest
  return std::bit_cast<float>(bits);
}

// Column-major matrix `rows` x `cols` at `p` with leading dimension `ld`, as floats.
std::vector<float> Gather(cudaDataType_t type, const void* p, int64_t rows, int64_t cols, int64_t ld, bool trans,
                          bool tf32) {
  // out is op(M) column-major: out[i + r j] for op(M)[i, j], r its rows.
  const int64_t r = trans ? cols : rows, c = trans ? rows : cols;
  std::vector<float> out(static_cast<size_t>(r * c));
  for (int64_t j = 0; j < c; ++j) {
    for (int64_t i = 0; i < r; ++i) {
      const int64_t at = trans ? j + i * ld : i + j * ld;
      float v = type == CUDA_R_32F ? static_cast<const float*>(p)[at]
                                   : __bfloat162float(static_cast<const __nv_bfloat16*>(p)[at]);
      if (tf32) v = Tf32(v);
      out[static_cast<size_t>(i + r * j)] = v;
    }
  }
  return out;
}

float LoadD(bool fp32, const void* d, int64_t at) {
  return fp32 ? static_cast<const float*>(d)[at] : __bfloat162float(static_cast<const __nv_bfloat16*>(d)[at]);
}

void StoreD(bool fp32, void* d, int64_t at, float v) {
  if (fp32) {
    static_cast<float*>(d)[at] = v;
  } else {
    static_cast<__nv_bfloat16*>(d)[at] = __float2bfloat16_rn(v);
  }
}

absl::Status CheckLayout(const Gemm& g, const char* name, int64_t rows, int64_t ld) {
  if (ld < (rows > 1 ? rows : 1)) {
    return absl::InternalError(absl::StrCat(g.what, ": layout ", name, ": leading dimension ", ld, " below its ", rows,
                                            " rows (CUBLAS_STATUS_INVALID_VALUE)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunGemm(MatmulContext& ctx, cudaDataType_t type, const Gemm& g, cudaStream_t /*stream*/) {
  if (type != CUDA_R_32F && type != CUDA_R_16BF) {
    return absl::InternalError(absl::StrCat(g.what, ": the emulation multiplies float and bf16 only"));
  }
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1) {
    return absl::InternalError(absl::StrCat(g.what, ": m, n, k must be >= 0 and batch >= 1"));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckLayout(g, "A", g.trans_a ? g.k : g.m, g.lda));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckLayout(g, "B", g.trans_b ? g.n : g.k, g.ldb));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckLayout(g, "D", g.m, g.ldd));
  const bool tf32 = type == CUDA_R_32F && ctx.allow_tf32();
  const bool d_fp32 = g.d_fp32 || type == CUDA_R_32F;
  const int64_t elem = type == CUDA_R_32F ? 4 : 2, d_elem = d_fp32 ? 4 : 2;
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const auto* a = static_cast<const unsigned char*>(g.a) + batch * g.stride_a * elem;
    const auto* b = static_cast<const unsigned char*>(g.b) + batch * g.stride_b * elem;
    auto* d = static_cast<unsigned char*>(g.d) + batch * g.stride_d * d_elem;
    // op(A) [m, k] and op(B) [k, n], column-major and packed.
    const std::vector<float> pa = Gather(type, a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.trans_a, tf32);
    const std::vector<float> pb = Gather(type, b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.trans_b, tf32);
    std::vector<float> acc(static_cast<size_t>(g.m));
    for (int64_t j = 0; j < g.n; ++j) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t kk = 0; kk < g.k; ++kk) {
        const float bv = pb[static_cast<size_t>(kk + g.k * j)];
        const float* col = pa.data() + g.m * kk;
        for (int64_t i = 0; i < g.m; ++i) acc[static_cast<size_t>(i)] += col[i] * bv;
      }
      for (int64_t i = 0; i < g.m; ++i) {
        const int64_t at = i + j * g.ldd;
        float v = g.alpha * acc[static_cast<size_t>(i)];
        if (g.beta != 0.0f) v += g.beta * LoadD(d_fp32, d, at);
        if (g.bias != nullptr) v += LoadD(type == CUDA_R_32F, g.bias, i);
        StoreD(d_fp32, d, at, v);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<MatmulContext>> MatmulContext::Create(Options options) {
  void* workspace = nullptr;
  if (options.workspace_bytes > 0) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&workspace, options.workspace_bytes), "cudaMalloc workspace"));
  }
  return std::unique_ptr<MatmulContext>(new MatmulContext(options, 0, nullptr, workspace));
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
}

}  // namespace gradsync::kernels::cuda
