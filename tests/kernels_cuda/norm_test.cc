// LayerNorm and RMSNorm against kernels/cpu/layernorm.h and rmsnorm.h.
#include <gtest/gtest.h>

#include <vector>

#include "gradsync/kernels/cpu/layernorm.h"
#include "gradsync/kernels/cpu/rmsnorm.h"
#include "gradsync/kernels/cuda/layernorm.cuh"
#include "gradsync/kernels/cuda/rmsnorm.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::Random;
using testing::TolFor;
using testing::Upload;

struct Shape {
  int64_t n, c;
};

// One row, one column, odd widths, and row counts that give the dweight reduction several chunks
// (129 x 130) as well as one.
const Shape kShapes[] = {{1, 1}, {1, 7}, {5, 33}, {17, 64}, {64, 768}, {3, 1000}, {129, 130}, {300, 96}};
constexpr float kEps = 1e-5f;

template <typename T>
class NormTest : public testing::CudaTest {
 protected:
  void CheckLayerNorm(const Shape& s, bool full_scratch) {
    SCOPED_TRACE(::testing::Message() << "n=" << s.n << " c=" << s.c << " scratch=" << full_scratch);
    const uint32_t seed = static_cast<uint32_t>(s.n * 1009 + s.c);
    // An offset mean checks that the variance is taken around it (no E[x^2] - E[x]^2).
    const std::vector<float> x = Random<T>(s.n * s.c, seed, 2.0f, 4.0f);
    const std::vector<float> w = Random<T>(s.c, seed + 1, 0.5f, 1.5f);
    const std::vector<float> b = Random<T>(s.c, seed + 2);
    const std::vector<float> dy = Random<T>(s.n * s.c, seed + 3);
    const std::vector<float> dx0 = Random<T>(s.n * s.c, seed + 4);
    const std::vector<float> dw0 = Random<T>(s.c, seed + 5), db0 = Random<T>(s.c, seed + 6);

    std::vector<float> want_y(s.n * s.c), mean(s.n), rstd(s.n);
    cpu::LayerNormForward(want_y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), s.n, s.c, kEps);
    std::vector<float> want_dx = dx0, want_dw = dw0, want_db = db0;
    cpu::LayerNormBackward(want_dx.data(), want_dw.data(), want_db.data(), dy.data(), x.data(), w.data(), mean.data(),
                           rstd.data(), s.n, s.c);

    DeviceBuffer<T> d_x, d_w, d_b, d_dy, d_y, d_dx, d_dw, d_db;
    DeviceBuffer<float> d_mean, d_rstd, d_ref_mean, d_ref_rstd, d_scratch;
    GRADSYNC_ASSIGN_OR_FAIL(d_x, Upload<T>(x));
    GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<T>(w));
    GRADSYNC_ASSIGN_OR_FAIL(d_b, Upload<T>(b));
    GRADSYNC_ASSIGN_OR_FAIL(d_dy, Upload<T>(dy));
    GRADSYNC_ASSIGN_OR_FAIL(d_y, testing::Poisoned<T>(s.n * s.c));
    GRADSYNC_ASSIGN_OR_FAIL(d_mean, testing::Poisoned<float>(s.n));
    GRADSYNC_ASSIGN_OR_FAIL(d_rstd, testing::Poisoned<float>(s.n));
    // The backward pass gets the CPU's statistics, so it is checked on its own.
    GRADSYNC_ASSIGN_OR_FAIL(d_ref_mean, Upload<float>(mean));
    GRADSYNC_ASSIGN_OR_FAIL(d_ref_rstd, Upload<float>(rstd));
    GRADSYNC_ASSIGN_OR_FAIL(d_dx, Upload<T>(dx0));
    GRADSYNC_ASSIGN_OR_FAIL(d_dw, Upload<T>(dw0));
    GRADSYNC_ASSIGN_OR_FAIL(d_db, Upload<T>(db0));
    const int64_t scratch_floats = full_scratch ? LayerNormBackwardScratchFloats(s.n, s.c) : 0;
    GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<float>::Allocate(scratch_floats));

    GRADSYNC_ASSERT_OK(LayerNormForward<T>(d_y.data(), d_mean.data(), d_rstd.data(), d_x.data(), d_w.data(), d_b.data(),
                                           s.n, s.c, kEps, stream_));
    GRADSYNC_ASSERT_OK(LayerNormBackward<T>(d_dx.data(), d_dw.data(), d_db.data(), d_dy.data(), d_x.data(), d_w.data(),
                                            d_ref_mean.data(), d_ref_rstd.data(), s.n, s.c, d_scratch.data(),
                                            scratch_floats, stream_));
    ASSERT_TRUE(Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_y));
    EXPECT_TRUE(Close(got, want_y, TolFor<T>(), "out"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_mean));
    EXPECT_TRUE(Close(got, mean, TolFor<float>(), "mean"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_rstd));
    EXPECT_TRUE(Close(got, rstd, TolFor<float>(), "rstd"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dx));
    EXPECT_TRUE(Close(got, want_dx, TolFor<T>(), "dinp"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dw));
    EXPECT_TRUE(Close(got, want_dw, TolFor<T>(), "dweight"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_db));
    EXPECT_TRUE(Close(got, want_db, TolFor<T>(), "dbias"));
  }

  void CheckRmsNorm(const Shape& s) {
    SCOPED_TRACE(::testing::Message() << "n=" << s.n << " c=" << s.c);
    const uint32_t seed = static_cast<uint32_t>(s.n * 2003 + s.c);
    const std::vector<float> x = Random<T>(s.n * s.c, seed);
    const std::vector<float> w = Random<T>(s.c, seed + 1, 0.5f, 1.5f);
    const std::vector<float> dy = Random<T>(s.n * s.c, seed + 2);
    const std::vector<float> dx0 = Random<T>(s.n * s.c, seed + 3), dw0 = Random<T>(s.c, seed + 4);

    std::vector<float> want_y(s.n * s.c), rstd(s.n);
    cpu::RmsNormForward(want_y.data(), rstd.data(), x.data(), w.data(), s.n, s.c, kEps);
    std::vector<float> want_dx = dx0, want_dw = dw0;
    cpu::RmsNormBackward(want_dx.data(), want_dw.data(), dy.data(), x.data(), w.data(), rstd.data(), s.n, s.c);

    DeviceBuffer<T> d_x, d_w, d_dy, d_y, d_dx, d_dw;
    DeviceBuffer<float> d_rstd, d_ref_rstd, d_scratch;
    GRADSYNC_ASSIGN_OR_FAIL(d_x, Upload<T>(x));
    GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<T>(w));
    GRADSYNC_ASSIGN_OR_FAIL(d_dy, Upload<T>(dy));
    GRADSYNC_ASSIGN_OR_FAIL(d_y, testing::Poisoned<T>(s.n * s.c));
    GRADSYNC_ASSIGN_OR_FAIL(d_rstd, testing::Poisoned<float>(s.n));
    GRADSYNC_ASSIGN_OR_FAIL(d_ref_rstd, Upload<float>(rstd));
    GRADSYNC_ASSIGN_OR_FAIL(d_dx, Upload<T>(dx0));
    GRADSYNC_ASSIGN_OR_FAIL(d_dw, Upload<T>(dw0));
    const int64_t scratch_floats = RmsNormBackwardScratchFloats(s.n, s.c);
    GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<float>::Allocate(scratch_floats));

    GRADSYNC_ASSERT_OK(RmsNormForward<T>(d_y.data(), d_rstd.data(), d_x.data(), d_w.data(), s.n, s.c, kEps, stream_));
    GRADSYNC_ASSERT_OK(RmsNormBackward<T>(d_dx.data(), d_dw.data(), d_dy.data(), d_x.data(), d_w.data(),
                                          d_ref_rstd.data(), s.n, s.c, d_scratch.data(), scratch_floats, stream_));
    ASSERT_TRUE(Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_y));
    EXPECT_TRUE(Close(got, want_y, TolFor<T>(), "out"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_rstd));
    EXPECT_TRUE(Close(got, rstd, TolFor<float>(), "rstd"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dx));
    EXPECT_TRUE(Close(got, want_dx, TolFor<T>(), "dinp"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dw));
    EXPECT_TRUE(Close(got, want_dw, TolFor<T>(), "dweight"));
  }
};

TYPED_TEST_SUITE(NormTest, testing::Dtypes);

TYPED_TEST(NormTest, LayerNormMatchesCpu) {
  for (const Shape& s : kShapes) this->CheckLayerNorm(s, true);
}

// Without scratch the column sums run as a single chunk: same values up to rounding.
TYPED_TEST(NormTest, LayerNormMatchesCpuWithoutScratch) {
  this->CheckLayerNorm({129, 130}, false);
  this->CheckLayerNorm({300, 96}, false);
}

TYPED_TEST(NormTest, RmsNormMatchesCpu) {
  for (const Shape& s : kShapes) this->CheckRmsNorm(s);
}

TYPED_TEST(NormTest, RejectsBadShapes) {
  using T = TypeParam;
  const absl::Status status =
      LayerNormForward<T>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 4, 0, kEps, this->stream_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("c must be > 0"), std::string::npos) << status;
  const absl::Status rms = RmsNormForward<T>(nullptr, nullptr, nullptr, nullptr, 4, 8, kEps, this->stream_);
  EXPECT_EQ(rms.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rms.message().find("out is null"), std::string::npos) << rms;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
