#include "gradsync/kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "clones.h"
#include "fast_exp.h"
#include "gemm.h"
#include "reduce.h"

namespace gradsync::kernels::cpu {
namespace {

using internal::Gemm;

// Query rows are processed in blocks; block [i0, i0 + m) attends to keys [0, i0 + m) only, which
// skips the products above the diagonal's blocks (a quarter of them at T = 128, more as T grows).
constexpr int64_t kQueryBlock = 64;

// Pointers to the heads one (b, h) pair reads.
template <typename Ptr>
struct HeadView {
  Ptr q, k, v;
};

template <typename Ptr>
HeadView<Ptr> Heads(Ptr qkv, const AttentionShape& s, int64_t b, int64_t h) {
  const int64_t g = h / (s.heads / s.kv_heads);
  Ptr row = qkv + b * s.seq_len * s.qkv_width();
  return {row + h * s.head_dim, row + (s.heads + g) * s.head_dim, row + (s.heads + s.kv_heads + g) * s.head_dim};
}

// Causal softmax in place over rows [i0, i1) of scores [T, T] (row i holds its scores in
// columns [0, i]); entries right of the diagonal become 0 up to column `width`.
template <typename T>
GRADSYNC_CLONES void CausalSoftmax(T* scores, int64_t seq_len, int64_t i0, int64_t i1, int64_t width) {
  for (int64_t i = i0; i < i1; ++i) {
    T* row = scores + i * seq_len;
    const T max = internal::MaxOf(row, i + 1);
    for (int64_t j = 0; j <= i; ++j) row[j] = internal::Exp(row[j] - max);
    const T inv = static_cast<T>(1.0 / internal::SumOf(i + 1, [row](int64_t j) { return row[j]; }));
    for (int64_t j = 0; j <= i; ++j) row[j] *= inv;
    std::fill(row + i + 1, row + width, T{0});
  }
}

// dS = P * (dP - rowsum(P * dP)) in place over dP, rows [i0, i1), columns up to the diagonal.
template <typename T>
GRADSYNC_CLONES void SoftmaxBackward(T* dp, const T* p, int64_t seq_len, int64_t i0, int64_t i1, int64_t width) {
  for (int64_t i = i0; i < i1; ++i) {
    T* d = dp + i * seq_len;
    const T* pr = p + i * seq_len;
    const T dot = static_cast<T>(internal::SumOf(i + 1, [d, pr](int64_t j) { return pr[j] * d[j]; }));
    for (int64_t j = 0; j <= i; ++j) d[j] = pr[j] * (d[j] - dot);
    std::fill(d + i + 1, d + width, T{0});
  }
}

}  // namespace

template <typename T>
void AttentionForward(T* out, T* att, const T* qkv, const AttentionShape& s) {
  const int64_t n = s.seq_len, d = s.head_dim, r = s.qkv_width(), c = s.out_width();
  if (s.batch == 0 || n == 0) return;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const HeadView<const T*> hv = Heads(qkv, s, b, h);
      T* p = att + (b * s.heads + h) * n * n;
      T* y = out + b * n * c + h * d;
      for (int64_t i0 = 0; i0 < n; i0 += kQueryBlock) {
        const int64_t m = std::min(kQueryBlock, n - i0), keys = i0 + m;
        T* pb = p + i0 * n;
        Gemm(CblasNoTrans, CblasTrans, m, keys, d, scale, hv.q + i0 * r, r, hv.k, r, T{0}, pb, n);
        CausalSoftmax(p, n, i0, keys, n);
        Gemm(CblasNoTrans, CblasNoTrans, m, d, keys, T{1}, pb, n, hv.v, r, T{0}, y + i0 * c, c);
      }
    }
  }
}

template <typename T>
void AttentionBackward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, const AttentionShape& s) {
  const int64_t n = s.seq_len, d = s.head_dim, r = s.qkv_width(), c = s.out_width();
  if (s.batch == 0 || n == 0) return;
  const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const HeadView<const T*> hv = Heads(qkv, s, b, h);
      const HeadView<T*> dh = Heads(dqkv, s, b, h);
      const T* p = att + (b * s.heads + h) * n * n;
      const T* dy = dout + b * n * c + h * d;
      for (int64_t i0 = 0; i0 < n; i0 += kQueryBlock) {
        const int64_t m = std::min(kQueryBlock, n - i0), keys = i0 + m;
        const T* pb = p + i0 * n;
        T* ds = scratch + i0 * n;
        Gemm(CblasNoTrans, CblasTrans, m, keys, d, T{1}, dy + i0 * c, c, hv.v, r, T{0}, ds, n);
        Gemm(CblasTrans, CblasNoTrans, keys, d, m, T{1}, pb, n, dy + i0 * c, c, T{1}, dh.v, r);
        SoftmaxBackward(scratch, p, n, i0, keys, keys);
        Gemm(CblasNoTrans, CblasNoTrans, m, d, keys, scale, ds, n, hv.k, r, T{1}, dh.q + i0 * r, r);
        Gemm(CblasTrans, CblasNoTrans, keys, d, m, scale, ds, n, hv.q + i0 * r, r, T{1}, dh.k, r);
      }
    }
  }
}

template void AttentionForward<float>(float*, float*, const float*, const AttentionShape&);
template void AttentionForward<double>(double*, double*, const double*, const AttentionShape&);
template void AttentionBackward<float>(float*, float*, const float*, const float*, const float*, const AttentionShape&);
template void AttentionBackward<double>(double*, double*, const double*, const double*, const double*,
                                        const AttentionShape&);

}  // namespace gradsync::kernels::cpu
