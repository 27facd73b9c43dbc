// Row reductions for the elementwise kernels, written so that they vectorise: 8 interleaved
// partial results, combined in a fixed order at the end. The order depends only on n, so the
// result is deterministic, though not bitwise the sequential sum. Private to kernels/cpu.
#pragma once

#include <cstdint>

namespace gradsync::kernels::cpu::internal {

inline constexpr int kLanes = 8;

// sum_{i < n} term(i), accumulated in double.
template <typename Term>
inline double SumOf(int64_t n, Term term) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += static_cast<double>(term(i + j));
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += static_cast<double>(term(i));
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// max_{i < n} x[i]; n >= 1. NaNs are not propagated reliably.
template <typename T>
inline T MaxOf(const T* x, int64_t n) {
  T acc[kLanes];
  for (int j = 0; j < kLanes; ++j) acc[j] = x[0];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] = x[i] > acc[j] ? x[i] : acc[j];
  T m = acc[0];
  for (int j = 1; j < kLanes; ++j) m = acc[j] > m ? acc[j] : m;
  return m;
}

}  // namespace gradsync::kernels::cpu::internal
