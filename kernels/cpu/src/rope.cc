#include "gradsync/kernels/cpu/rope.h"

#include <cmath>

namespace gradsync::kernels::cpu {
namespace {

// Rotates every vector of every row by the angle table of its position; `sign` = +1 rotates
// forward, -1 backward (the transpose).
template <typename T>
void Rotate(T* x, const T* cos, const T* sin, int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
            int64_t row_stride, T sign) {
  const int64_t half = head_dim / 2;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      T* row = x + (b * seq_len + t) * row_stride;
      const T* c = cos + t * half;
      const T* s = sin + t * half;
      for (int64_t h = 0; h < heads; ++h) {
        T* v = row + h * head_dim;
        for (int64_t i = 0; i < half; ++i) {
          const T a = v[i], b2 = v[i + half], si = sign * s[i];
          v[i] = a * c[i] - b2 * si;
          v[i + half] = b2 * c[i] + a * si;
        }
      }
    }
  }
}

}  // namespace

template <typename T>
void RopeTables(T* cos, T* sin, int64_t seq_len, int64_t head_dim, double theta) {
  const int64_t half = head_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double freq = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
    for (int64_t t = 0; t < seq_len; ++t) {
      const double angle = static_cast<double>(t) * freq;
      cos[t * half + i] = static_cast<T>(std::cos(angle));
      sin[t * half + i] = static_cast<T>(std::sin(angle));
    }
  }
}

template <typename T>
void RopeForward(T* x, const T* cos, const T* sin, int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
                 int64_t row_stride) {
  Rotate(x, cos, sin, batch, seq_len, heads, head_dim, row_stride, T{1});
}

template <typename T>
void RopeBackward(T* dx, const T* cos, const T* sin, int64_t batch, int64_t seq_len, int64_t heads, int64_t head_dim,
                  int64_t row_stride) {
  Rotate(dx, cos, sin, batch, seq_len, heads, head_dim, row_stride, T{-1});
}

template void RopeTables<float>(float*, float*, int64_t, int64_t, double);
template void RopeTables<double>(double*, double*, int64_t, int64_t, double);
template void RopeForward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t);
template void RopeForward<double>(double*, const double*, const double*, int64_t, int64_t, int64_t, int64_t, int64_t);
template void RopeBackward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t);
template void RopeBackward<double>(double*, const double*, const double*, int64_t, int64_t, int64_t, int64_t, int64_t);

}  // namespace gradsync::kernels::cpu
