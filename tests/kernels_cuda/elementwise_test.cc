// GELU, SwiGLU, residual and rotary embeddings against their kernels/cpu references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gradsync/kernels/cpu/gelu.h"
#include "gradsync/kernels/cpu/residual.h"
#include "gradsync/kernels/cpu/rope.h"
#include "gradsync/kernels/cpu/swiglu.h"
#include "gradsync/kernels/cuda/gelu.cuh"
#include "gradsync/kernels/cuda/residual.cuh"
#include "gradsync/kernels/cuda/rope.cuh"
#include "gradsync/kernels/cuda/swiglu.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::Random;
using testing::TolFor;
using testing::Upload;

template <typename T>
class ElementwiseTest : public testing::CudaTest {};
TYPED_TEST_SUITE(ElementwiseTest, testing::Dtypes);

// Lengths around the 16-byte packs (4 floats, 8 bf16) and their tails. offset 1 misaligns every
// pointer, which takes the one-element path.
// Overwriting, dinp starts as NaN (the element before an offset view included: it must stay so)
// and comes out as the bare gradient.
TYPED_TEST(ElementwiseTest, GeluMatchesCpu) {
  using T = TypeParam;
  for (const GradMode mode : {GradMode::kAccumulate, GradMode::kOverwrite}) {
    for (const int64_t n : {1, 7, 8, 9, 1000, 4099}) {
      for (const int offset : {0, 1}) {
        const bool overwrite = mode == GradMode::kOverwrite;
        SCOPED_TRACE(::testing::Message() << "n=" << n << " offset=" << offset << " overwrite=" << overwrite);
        const uint32_t seed = static_cast<uint32_t>(n * 3 + offset);
        // Wide enough to reach both tails of the tanh (and the exp clamp).
        const std::vector<float> x = Random<T>(n + offset, seed, -12.0f, 12.0f);
        const std::vector<float> dy = Random<T>(n + offset, seed + 1);
        std::vector<float> dx0 = Random<T>(n + offset, seed + 2);
        if (overwrite) std::fill(dx0.begin(), dx0.end(), 0.0f);
        std::vector<float> want_y(n + offset, 0.0f), want_dx = dx0;
        cpu::GeluForward(want_y.data() + offset, x.data() + offset, n);
        cpu::GeluBackward(want_dx.data() + offset, x.data() + offset, dy.data() + offset, n);

        DeviceBuffer<T> d_x, d_dy, d_y, d_dx;
        GRADSYNC_ASSIGN_OR_FAIL(d_x, Upload<T>(x));
        GRADSYNC_ASSIGN_OR_FAIL(d_dy, Upload<T>(dy));
        GRADSYNC_ASSIGN_OR_FAIL(d_y, Upload<T>(std::vector<float>(n + offset, 0.0f)));
        if (overwrite) {
          GRADSYNC_ASSIGN_OR_FAIL(d_dx, testing::Poisoned<T>(n + offset));
        } else {
          GRADSYNC_ASSIGN_OR_FAIL(d_dx, Upload<T>(dx0));
        }
        GRADSYNC_ASSERT_OK(GeluForward<T>(d_y.data() + offset, d_x.data() + offset, n, this->stream_));
        GRADSYNC_ASSERT_OK(
            GeluBackward<T>(d_dx.data() + offset, d_x.data() + offset, d_dy.data() + offset, n, this->stream_, mode));
        ASSERT_TRUE(this->Sync());
        std::vector<float> got;
        GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_y));
        EXPECT_TRUE(Close(got, want_y, TolFor<T>(), "gelu"));
        GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dx));
        if (overwrite && offset == 1) {
          ASSERT_TRUE(std::isnan(got[0])) << "the element before dinp was written";
          got[0] = 0.0f;
        }
        EXPECT_TRUE(Close(got, want_dx, TolFor<T>(), "dinp"));
      }
    }
  }
}

// In place: out aliases inp.
TYPED_TEST(ElementwiseTest, GeluInPlace) {
  using T = TypeParam;
  const std::vector<float> x = Random<T>(1003, 77, -4.0f, 4.0f);
  std::vector<float> want(x.size());
  cpu::GeluForward(want.data(), x.data(), static_cast<int64_t>(x.size()));
  DeviceBuffer<T> d_x;
  GRADSYNC_ASSIGN_OR_FAIL(d_x, Upload<T>(x));
  GRADSYNC_ASSERT_OK(GeluForward<T>(d_x.data(), d_x.data(), static_cast<int64_t>(x.size()), this->stream_));
  ASSERT_TRUE(this->Sync());
  std::vector<float> got;
  GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_x));
  EXPECT_TRUE(Close(got, want, TolFor<T>(), "gelu in place"));
}

TYPED_TEST(ElementwiseTest, SwiGluMatchesCpu) {
  using T = TypeParam;
  struct Shape {
    int64_t n, m;
  };
  // m = 8 and 256 take the packed path for both types; 37 and 1 the one-element path.
  for (const GradMode mode : {GradMode::kAccumulate, GradMode::kOverwrite}) {
    for (const Shape s : {Shape{1, 1}, Shape{3, 8}, Shape{5, 37}, Shape{64, 256}, Shape{7, 12}}) {
      const bool overwrite = mode == GradMode::kOverwrite;
      SCOPED_TRACE(::testing::Message() << "n=" << s.n << " m=" << s.m << " overwrite=" << overwrite);
      const uint32_t seed = static_cast<uint32_t>(s.n * 31 + s.m);
      const std::vector<float> inp = Random<T>(s.n * 2 * s.m, seed, -6.0f, 6.0f);
      const std::vector<float> dy = Random<T>(s.n * s.m, seed + 1);
      const std::vector<float> dinp0 =
          overwrite ? std::vector<float>(s.n * 2 * s.m, 0.0f) : Random<T>(s.n * 2 * s.m, seed + 2);
      std::vector<float> want_y(s.n * s.m), want_dinp = dinp0;
      cpu::SwiGluForward(want_y.data(), inp.data(), s.n, s.m);
      cpu::SwiGluBackward(want_dinp.data(), inp.data(), dy.data(), s.n, s.m);

      DeviceBuffer<T> d_inp, d_dy, d_y, d_dinp;
      GRADSYNC_ASSIGN_OR_FAIL(d_inp, Upload<T>(inp));
      GRADSYNC_ASSIGN_OR_FAIL(d_dy, Upload<T>(dy));
      GRADSYNC_ASSIGN_OR_FAIL(d_y, testing::Poisoned<T>(s.n * s.m));
      if (overwrite) {
        GRADSYNC_ASSIGN_OR_FAIL(d_dinp, testing::Poisoned<T>(s.n * 2 * s.m));
      } else {
        GRADSYNC_ASSIGN_OR_FAIL(d_dinp, Upload<T>(dinp0));
      }
      GRADSYNC_ASSERT_OK(SwiGluForward<T>(d_y.data(), d_inp.data(), s.n, s.m, this->stream_));
      GRADSYNC_ASSERT_OK(SwiGluBackward<T>(d_dinp.data(), d_inp.data(), d_dy.data(), s.n, s.m, this->stream_, mode));
      ASSERT_TRUE(this->Sync());
      std::vector<float> got;
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_y));
      EXPECT_TRUE(Close(got, want_y, TolFor<T>(), "swiglu"));
      GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dinp));
      EXPECT_TRUE(Close(got, want_dinp, TolFor<T>(), "dinp"));
    }
  }
}

TYPED_TEST(ElementwiseTest, ResidualMatchesCpu) {
  using T = TypeParam;
  for (const int64_t n : {1, 5, 16, 1001}) {
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    const std::vector<float> a = Random<T>(n, static_cast<uint32_t>(n));
    const std::vector<float> b = Random<T>(n, static_cast<uint32_t>(n) + 1);
    std::vector<float> want(n);
    cpu::ResidualForward(want.data(), a.data(), b.data(), n);
    std::vector<float> want_acc(n);
    for (int64_t i = 0; i < n; ++i) want_acc[i] = a[i] + b[i];

    DeviceBuffer<T> d_a, d_b, d_out;
    GRADSYNC_ASSIGN_OR_FAIL(d_a, Upload<T>(a));
    GRADSYNC_ASSIGN_OR_FAIL(d_b, Upload<T>(b));
    GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<T>(n));
    GRADSYNC_ASSERT_OK(ResidualForward<T>(d_out.data(), d_a.data(), d_b.data(), n, this->stream_));
    GRADSYNC_ASSERT_OK(AccumulateInto<T>(d_a.data(), d_b.data(), n, this->stream_));
    ASSERT_TRUE(this->Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_out));
    EXPECT_TRUE(Close(got, want, TolFor<T>(), "residual"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_a));
    EXPECT_TRUE(Close(got, want_acc, TolFor<T>(), "accumulate"));
  }
}

// The q and k heads of a fused qkv row rotate; the v heads must stay untouched.
TYPED_TEST(ElementwiseTest, RopeMatchesCpu) {
  using T = TypeParam;
  struct Shape {
    int64_t batch, seq_len, heads, kv_heads, head_dim;
  };
  for (const Shape s : {Shape{1, 1, 1, 1, 2}, Shape{2, 5, 4, 2, 8}, Shape{3, 37, 6, 3, 64}, Shape{1, 130, 2, 1, 128}}) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                                      << " KVH=" << s.kv_heads << " D=" << s.head_dim);
    const double theta = 10000.0;
    const int64_t half = s.head_dim / 2;
    const int64_t stride = (s.heads + 2 * s.kv_heads) * s.head_dim;
    const int64_t rotated = s.heads + s.kv_heads;
    std::vector<float> cos_ref(s.seq_len * half), sin_ref(s.seq_len * half);
    cpu::RopeTables(cos_ref.data(), sin_ref.data(), s.seq_len, s.head_dim, theta);
    const std::vector<float> x = Random<T>(s.batch * s.seq_len * stride, 5 + s.seq_len);
    std::vector<float> want_fwd = x;
    cpu::RopeForward(want_fwd.data(), cos_ref.data(), sin_ref.data(), s.batch, s.seq_len, rotated, s.head_dim, stride);
    std::vector<float> want_bwd = x;
    cpu::RopeBackward(want_bwd.data(), cos_ref.data(), sin_ref.data(), s.batch, s.seq_len, rotated, s.head_dim, stride);

    DeviceBuffer<float> d_cos, d_sin;
    GRADSYNC_ASSIGN_OR_FAIL(d_cos, testing::Poisoned<float>(cos_ref.size()));
    GRADSYNC_ASSIGN_OR_FAIL(d_sin, testing::Poisoned<float>(sin_ref.size()));
    GRADSYNC_ASSERT_OK(RopeTables(d_cos.data(), d_sin.data(), s.seq_len, s.head_dim, theta, this->stream_));
    DeviceBuffer<T> d_fwd, d_bwd;
    GRADSYNC_ASSIGN_OR_FAIL(d_fwd, Upload<T>(x));
    GRADSYNC_ASSIGN_OR_FAIL(d_bwd, Upload<T>(x));
    GRADSYNC_ASSERT_OK(RopeForward<T>(d_fwd.data(), d_cos.data(), d_sin.data(), s.batch, s.seq_len, rotated, s.head_dim,
                                      stride, this->stream_));
    GRADSYNC_ASSERT_OK(RopeBackward<T>(d_bwd.data(), d_cos.data(), d_sin.data(), s.batch, s.seq_len, rotated,
                                       s.head_dim, stride, this->stream_));
    ASSERT_TRUE(this->Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_cos));
    EXPECT_TRUE(Close(got, cos_ref, {1e-6, 1e-6, 1e-6}, "cos table"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_sin));
    EXPECT_TRUE(Close(got, sin_ref, {1e-6, 1e-6, 1e-6}, "sin table"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_fwd));
    EXPECT_TRUE(Close(got, want_fwd, TolFor<T>(), "forward"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_bwd));
    EXPECT_TRUE(Close(got, want_bwd, TolFor<T>(), "backward"));
  }
}

TYPED_TEST(ElementwiseTest, RejectsBadShapes) {
  using T = TypeParam;
  const absl::Status odd = RopeForward<T>(nullptr, nullptr, nullptr, 1, 1, 1, 3, 3, this->stream_);
  EXPECT_EQ(odd.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(odd.message().find("head_dim must be even"), std::string::npos) << odd;
  const absl::Status negative = GeluForward<T>(nullptr, nullptr, -1, this->stream_);
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(negative.message().find("n must be >= 0"), std::string::npos) << negative;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
