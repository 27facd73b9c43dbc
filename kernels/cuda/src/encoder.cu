// Embedding forward and deterministic backward (math in encoder.cuh).
#include "gradsync/kernels/cuda/encoder.cuh"

#ifdef GRADSYNC_WARP_EMULATION
#include "radix_sort_emulation.h"  // tests/kernels_emulated: the same sort on the host
#else
#include <cub/device/device_radix_sort.cuh>
#endif

#include "absl/strings/str_cat.h"
#include "common.cuh"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

using internal::bf16;
using internal::CeilDiv;
using internal::FromFloat;
using internal::ToFloat;

constexpr int kThreads = 256;
constexpr int kOwnerThreads = 128;
constexpr size_t kAlign = 256;

constexpr size_t AlignUp(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Radix-sort key bits that hold every value in [0, vocab] (vocab itself marks invalid tokens).
int KeyBits(int64_t vocab) {
  int bits = 1;
  while ((int64_t{1} << bits) <= vocab) ++bits;
  return bits;
}

// Scratch: sort keys in/out and row indices in/out (n int32 each), then cub's temporary storage.
struct ScratchLayout {
  int32_t* keys_in;
  int32_t* keys_out;
  int32_t* rows_in;
  int32_t* rows_out;
  void* sort_temp;
  size_t sort_temp_bytes;
};

ScratchLayout Carve(void* scratch, int64_t n, size_t sort_temp_bytes) {
  const size_t array = AlignUp(static_cast<size_t>(n) * sizeof(int32_t));
  char* base = static_cast<char*>(scratch);
  return {reinterpret_cast<int32_t*>(base),
          reinterpret_cast<int32_t*>(base + array),
          reinterpret_cast<int32_t*>(base + 2 * array),
          reinterpret_cast<int32_t*>(base + 3 * array),
          base + 4 * array,
          sort_temp_bytes};
}

absl::StatusOr<size_t> SortTempBytes(int64_t n, int64_t vocab) {
  size_t bytes = 0;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(
      cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                      static_cast<int32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                      static_cast<int32_t*>(nullptr), static_cast<int>(n), 0, KeyBits(vocab)),
      "cub::DeviceRadixSort::SortPairs (size query)"));
  return bytes;
}

template <typename T>
__global__ void EncoderForwardKernel(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t rows,
                                     int64_t seq_len, int64_t channels, int64_t vocab) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= rows * channels) return;
  const int64_t row = idx / channels, c = idx - row * channels;
  const int32_t token = tokens[row];
  if (token < 0 || token >= vocab) {
    out[idx] = FromFloat<T>(NAN);
    return;
  }
  float value = ToFloat(wte[static_cast<int64_t>(token) * channels + c]);
  if (wpe != nullptr) value += ToFloat(wpe[(row % seq_len) * channels + c]);
  out[idx] = FromFloat<T>(value);
}

// Sort input: key = token (vocab for an invalid one, so it cannot split a valid token's run),
// value = row index.
__global__ void EncoderSortInputKernel(int32_t* keys, int32_t* rows_idx, const int32_t* tokens, int64_t n,
                                       int64_t vocab) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int32_t token = tokens[i];
  keys[i] = (token >= 0 && token < vocab) ? token : static_cast<int32_t>(vocab);
  rows_idx[i] = static_cast<int32_t>(i);
}

// A block per sorted position; only the first position of each run of equal tokens works: it owns
// dwte[token] and adds the run's dout rows in ascending row order (the sort is stable).
template <typename T>
__global__ void __launch_bounds__(kOwnerThreads)
    EncoderWteBackwardKernel(T* dwte, const T* dout, const int32_t* sorted_tokens, const int32_t* sorted_rows,
                             int64_t n, int64_t channels, int64_t vocab) {
  const int64_t p = blockIdx.x;
  const int32_t token = sorted_tokens[p];
  if (token >= vocab || (p > 0 && sorted_tokens[p - 1] == token)) return;
  T* dst = dwte + static_cast<int64_t>(token) * channels;
  for (int64_t c = threadIdx.x; c < channels; c += kOwnerThreads) {
    float acc = ToFloat(dst[c]);
    for (int64_t q = p; q < n && sorted_tokens[q] == token; ++q) {
      acc += ToFloat(dout[static_cast<int64_t>(sorted_rows[q]) * channels + c]);
    }
    dst[c] = FromFloat<T>(acc);
  }
}

// dwpe[t, c] += sum_b dout[b, t, c], b in order.
template <typename T>
__global__ void EncoderWpeBackwardKernel(T* dwpe, const T* dout, int64_t batch, int64_t seq_len, int64_t channels) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= seq_len * channels) return;
  float acc = ToFloat(dwpe[idx]);
  for (int64_t b = 0; b < batch; ++b) acc += ToFloat(dout[b * seq_len * channels + idx]);
  dwpe[idx] = FromFloat<T>(acc);
}

absl::Status CheckSizes(const char* fn, int64_t batch, int64_t seq_len, int64_t channels, int64_t vocab) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "batch", batch));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "seq_len", seq_len));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(fn, "channels", channels));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::Positive(fn, "vocab", vocab));
  if (vocab >= INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(fn, ": vocab ", vocab, " does not fit int32"));
  }
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status EncoderForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t batch, int64_t seq_len,
                            int64_t channels, int64_t vocab, cudaStream_t stream) {
  constexpr const char* kFn = "EncoderForward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckSizes(kFn, batch, seq_len, channels, vocab));
  const int64_t total = batch * seq_len * channels;
  if (total == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "out", out));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "tokens", tokens));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "wte", wte));
  internal::LaunchKernel(EncoderForwardKernel<T>, static_cast<unsigned>(CeilDiv(total, kThreads)), kThreads, 0, stream,
                         out, tokens, wte, wpe, batch * seq_len, seq_len, channels, vocab);
  return LaunchStatus("EncoderForwardKernel");
}

absl::StatusOr<size_t> EncoderBackwardScratchBytes(int64_t rows, int64_t vocab) {
  constexpr const char* kFn = "EncoderBackwardScratchBytes";
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NonNegative(kFn, "rows", rows));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::Positive(kFn, "vocab", vocab));
  if (rows > INT32_MAX || vocab >= INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(kFn, ": rows ", rows, " and vocab ", vocab, " must fit int32"));
  }
  absl::StatusOr<size_t> sort_bytes = SortTempBytes(rows, vocab);
  if (!sort_bytes.ok()) return sort_bytes.status();
  return 4 * AlignUp(static_cast<size_t>(rows) * sizeof(int32_t)) + *sort_bytes;
}

template <typename T>
absl::Status EncoderBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t batch, int64_t seq_len,
                             int64_t channels, int64_t vocab, void* scratch, size_t scratch_bytes,
                             cudaStream_t stream) {
  constexpr const char* kFn = "EncoderBackward";
  GRADSYNC_CUDA_RETURN_IF_ERROR(CheckSizes(kFn, batch, seq_len, channels, vocab));
  const int64_t n = batch * seq_len;
  if (n == 0 || channels == 0) return absl::OkStatus();
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dwte", dwte));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "dout", dout));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "tokens", tokens));
  GRADSYNC_CUDA_RETURN_IF_ERROR(internal::NotNull(kFn, "scratch", scratch));
  absl::StatusOr<size_t> needed = EncoderBackwardScratchBytes(n, vocab);
  if (!needed.ok()) return needed.status();
  if (scratch_bytes < *needed) {
    return absl::InvalidArgumentError(
        absl::StrCat(kFn, ": scratch_bytes ", scratch_bytes, " is less than the ", *needed, " needed"));
  }
  const size_t sort_bytes = *needed - 4 * AlignUp(static_cast<size_t>(n) * sizeof(int32_t));
  const ScratchLayout s = Carve(scratch, n, sort_bytes);

  internal::LaunchKernel(EncoderSortInputKernel, static_cast<unsigned>(CeilDiv(n, kThreads)), kThreads, 0, stream,
                         s.keys_in, s.rows_in, tokens, n, vocab);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("EncoderSortInputKernel"));
  size_t temp_bytes = s.sort_temp_bytes;
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      CudaStatus(cub::DeviceRadixSort::SortPairs(s.sort_temp, temp_bytes, s.keys_in, s.keys_out, s.rows_in, s.rows_out,
                                                 static_cast<int>(n), 0, KeyBits(vocab), stream),
                 "cub::DeviceRadixSort::SortPairs"));
  internal::LaunchKernel(EncoderWteBackwardKernel<T>, static_cast<unsigned>(n), kOwnerThreads, 0, stream, dwte, dout,
                         s.keys_out, s.rows_out, n, channels, vocab);
  GRADSYNC_CUDA_RETURN_IF_ERROR(LaunchStatus("EncoderWteBackwardKernel"));
  if (dwpe == nullptr) return absl::OkStatus();
  internal::LaunchKernel(EncoderWpeBackwardKernel<T>, static_cast<unsigned>(CeilDiv(seq_len * channels, kThreads)),
                         kThreads, 0, stream, dwpe, dout, batch, seq_len, channels);
  return LaunchStatus("EncoderWpeBackwardKernel");
}

template absl::Status EncoderForward<float>(float*, const int32_t*, const float*, const float*, int64_t, int64_t,
                                            int64_t, int64_t, cudaStream_t);
template absl::Status EncoderForward<bf16>(bf16*, const int32_t*, const bf16*, const bf16*, int64_t, int64_t, int64_t,
                                           int64_t, cudaStream_t);
template absl::Status EncoderBackward<float>(float*, float*, const float*, const int32_t*, int64_t, int64_t, int64_t,
                                             int64_t, void*, size_t, cudaStream_t);
template absl::Status EncoderBackward<bf16>(bf16*, bf16*, const bf16*, const int32_t*, int64_t, int64_t, int64_t,
                                            int64_t, void*, size_t, cudaStream_t);

}  // namespace gradsync::kernels::cuda
