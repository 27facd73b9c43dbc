// Shared pieces of the CUDA kernel tests: the skip when no GPU is present, host values rounded to
// the element type under test, uploads and downloads, and the comparison with per-dtype
// tolerances against the CPU reference.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/kernels/cuda/device_buffer.h"

#define GRADSYNC_TEST_CONCAT_INNER(a, b) a##b
#define GRADSYNC_TEST_CONCAT(a, b) GRADSYNC_TEST_CONCAT_INNER(a, b)

// Fails the test (and returns) unless the absl::Status expression is OK.
#define GRADSYNC_ASSERT_OK(...)                                       \
  do {                                                                \
    const ::absl::Status gradsync_test_status_ = (__VA_ARGS__);       \
    ASSERT_TRUE(gradsync_test_status_.ok()) << gradsync_test_status_; \
  } while (false)

// `lhs = *expr` for an absl::StatusOr expression; fails the test (and returns) on an error.
#define GRADSYNC_ASSIGN_OR_FAIL(lhs, ...) \
  GRADSYNC_ASSIGN_OR_FAIL_IMPL(GRADSYNC_TEST_CONCAT(gradsync_status_or_, __LINE__), lhs, __VA_ARGS__)
#define GRADSYNC_ASSIGN_OR_FAIL_IMPL(tmp, lhs, ...) \
  auto tmp = (__VA_ARGS__);                         \
  ASSERT_TRUE(tmp.ok()) << tmp.status();            \
  lhs = std::move(*tmp)

namespace gradsync::kernels::cuda::testing {

using bf16 = __nv_bfloat16;
using Dtypes = ::testing::Types<float, bf16>;

// Empty when a CUDA device is usable; otherwise why not. Without a driver, cudaGetDeviceCount
// fails ("CUDA driver version is insufficient"): that is "no device", not an error.
inline std::string NoDeviceReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(err);
  }
  if (count == 0) return "cudaGetDeviceCount returned 0";
  return "";
}

// Every CUDA test derives from this: it skips when there is no device and owns a stream.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NoDeviceReason();
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // Waits for the stream and fails on any error it reports (also an earlier kernel's fault).
  ::testing::AssertionResult Sync() {
    const cudaError_t err = cudaStreamSynchronize(stream_);
    if (err == cudaSuccess) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "cudaStreamSynchronize: " << cudaGetErrorString(err);
  }

  cudaStream_t stream_ = nullptr;
};

// ---- element types ----

template <typename T>
inline T FromFloat(float x);
template <>
inline float FromFloat<float>(float x) {
  return x;
}
template <>
inline bf16 FromFloat<bf16>(float x) {
  return __float2bfloat16_rn(x);
}
inline float ToFloat(float x) { return x; }
inline float ToFloat(bf16 x) { return __bfloat162float(x); }

// x rounded to what T can hold, so that the CPU reference sees exactly the GPU's inputs.
template <typename T>
float RoundTo(float x) {
  return ToFloat(FromFloat<T>(x));
}

template <typename T>
std::vector<float> RoundAll(std::vector<float> values) {
  for (float& v : values) v = RoundTo<T>(v);
  return values;
}

// Uniform values in [lo, hi), rounded to T. Every caller passes its own seed: fresh data per check.
template <typename T>
std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = RoundTo<T>(dist(rng));
  return out;
}

template <typename T>
absl::StatusOr<DeviceBuffer<T>> Upload(const std::vector<float>& host) {
  std::vector<T> converted(host.size());
  for (size_t i = 0; i < host.size(); ++i) converted[i] = FromFloat<T>(host[i]);
  return DeviceBuffer<T>::FromHost(converted);
}

template <typename T>
absl::StatusOr<std::vector<float>> Download(const DeviceBuffer<T>& buffer) {
  absl::StatusOr<std::vector<T>> host = buffer.ToHost();
  if (!host.ok()) return host.status();
  std::vector<float> out(host->size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = ToFloat((*host)[i]);
  return out;
}

// A buffer of `n` elements whose every byte is 0xFF (NaN in float and bf16), so an element the
// kernel fails to write shows up in the comparison.
template <typename T>
absl::StatusOr<DeviceBuffer<T>> Poisoned(size_t n) {
  absl::StatusOr<DeviceBuffer<T>> buffer = DeviceBuffer<T>::Allocate(n);
  if (!buffer.ok()) return buffer.status();
  absl::Status status = buffer->FillBytes(0xFF);
  if (!status.ok()) return status;
  return buffer;
}

// ---- comparison ----

// got matches want when ||got - want|| <= norm_rel ||want|| and, element by element,
// |got - want| <= elem_rel |want| + elem_abs rms(want).
struct Tolerance {
  double norm_rel;
  double elem_rel;
  double elem_abs;
};

// fp32: rounding differences of reordered sums only. bf16: inputs are identical on both sides,
// so the difference is the GPU's final rounding to bf16 (2^-9 relative) plus fp32 noise.
template <typename T>
Tolerance TolFor() {
  if constexpr (std::is_same_v<T, float>) {
    return {1e-5, 1e-4, 1e-5};
  } else {
    return {1e-2, 2e-2, 1e-2};
  }
}

inline ::testing::AssertionResult Close(std::span<const float> got, std::span<const float> want, Tolerance tol,
                                        const std::string& what) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << what << ": " << got.size() << " elements, want " << want.size();
  }
  double diff_sq = 0.0, want_sq = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) && std::isfinite(want[i])) {
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << " (not finite), want " << want[i];
    }
    const double d = static_cast<double>(got[i]) - want[i];
    diff_sq += d * d;
    want_sq += static_cast<double>(want[i]) * want[i];
  }
  const double want_norm = std::sqrt(want_sq);
  const double rms = got.empty() ? 0.0 : std::sqrt(want_sq / static_cast<double>(got.size()));
  const double rel = want_norm > 0.0 ? std::sqrt(diff_sq) / want_norm : std::sqrt(diff_sq);
  if (rel > tol.norm_rel) {
    return ::testing::AssertionFailure() << what << ": ||got - want|| / ||want|| = " << rel << " > " << tol.norm_rel;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - want[i]);
    if (d > tol.elem_rel * std::abs(want[i]) + tol.elem_abs * rms) {
      return ::testing::AssertionFailure() << what << "[" << i << "] = " << got[i] << ", want " << want[i]
                                           << " (|diff| " << d << ", rms " << rms << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// The same for vectors (so that a braced list of floats can be the expectation).
inline ::testing::AssertionResult Close(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol,
                                        const std::string& what) {
  return Close(std::span<const float>(got), std::span<const float>(want), tol, what);
}

// Bitwise equality of two downloads of the same computation.
template <typename T>
::testing::AssertionResult Bitwise(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      return ::testing::AssertionFailure() << what << ": runs differ first at element " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace gradsync::kernels::cuda::testing
