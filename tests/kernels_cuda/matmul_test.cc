// cuBLASLt linear layer against kernels/cpu/matmul.h.
#include "gradsync/kernels/cuda/matmul.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "gradsync/kernels/cpu/matmul.h"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::Random;
using testing::TolFor;
using testing::Upload;

struct Shape {
  int64_t n, in, out;
};

// Ragged on purpose: widths that are not multiples of 8, 32 or 128, one row, one feature.
const Shape kShapes[] = {{1, 1, 1},     {1, 64, 32},    {7, 13, 5},     {33, 65, 17},
                         {64, 128, 96}, {130, 77, 258}, {256, 384, 192}};

template <typename T>
class MatmulTest : public testing::CudaTest {
 protected:
  void SetUp() override {
    testing::CudaTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    GRADSYNC_ASSIGN_OR_FAIL(ctx_, MatmulContext::Create());
  }

  // Forward and backward at one shape; bias_offset shifts the bias pointer by elements (1 makes it
  // unaligned, which takes the bias-rows path instead of the epilogue). With a stride, out and
  // dout rows lie `stride` apart and the padding (NaN) must be neither read nor written. With
  // GradMode::kOverwrite dinp starts as NaN and must come out as the bare product.
  void Check(const Shape& s, bool with_bias, int bias_offset, int64_t stride = 0,
             GradMode dinp_mode = GradMode::kAccumulate) {
    const bool overwrite = dinp_mode == GradMode::kOverwrite;
    SCOPED_TRACE(::testing::Message() << "n=" << s.n << " in=" << s.in << " out=" << s.out << " bias=" << with_bias
                                      << " offset=" << bias_offset << " stride=" << stride
                                      << " overwrite=" << overwrite);
    const int64_t ld = stride == 0 ? s.out : stride;
    // Packed rows of `x` [n, out] spread to `ld` apart, the gaps NaN; and back.
    const auto spread = [&](const std::vector<float>& x) {
      std::vector<float> rows(s.n * ld, std::numeric_limits<float>::quiet_NaN());
      for (int64_t i = 0; i < s.n; ++i) std::copy_n(x.begin() + i * s.out, s.out, rows.begin() + i * ld);
      return rows;
    };
    const uint32_t seed = static_cast<uint32_t>(s.n * 7919 + s.in * 131 + s.out);
    const std::vector<float> inp = Random<T>(s.n * s.in, seed);
    const std::vector<float> w = Random<T>(s.out * s.in, seed + 1);
    std::vector<float> bias_host = Random<T>(s.out + bias_offset, seed + 2);
    const std::vector<float> dout = Random<T>(s.n * s.out, seed + 3);
    const std::vector<float> dinp0 = overwrite ? std::vector<float>(s.n * s.in, 0.0f) : Random<T>(s.n * s.in, seed + 4);
    const std::vector<float> dw0 = Random<T>(s.out * s.in, seed + 5);
    const std::vector<float> db0 = Random<T>(s.out, seed + 6);
    const float* bias_ref = with_bias ? bias_host.data() + bias_offset : nullptr;

    std::vector<float> want_out(s.n * s.out);
    cpu::MatmulForward(want_out.data(), inp.data(), w.data(), bias_ref, s.n, s.in, s.out);
    std::vector<float> want_dinp = dinp0, want_dw = dw0, want_db = db0;
    cpu::MatmulBackward(want_dinp.data(), want_dw.data(), want_db.data(), dout.data(), inp.data(), w.data(), s.n, s.in,
                        s.out);

    DeviceBuffer<T> d_inp, d_w, d_bias, d_dout, d_out, d_dinp, d_dw, d_db;
    GRADSYNC_ASSIGN_OR_FAIL(d_inp, Upload<T>(inp));
    GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<T>(w));
    GRADSYNC_ASSIGN_OR_FAIL(d_bias, Upload<T>(bias_host));
    GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(spread(dout)));
    GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<T>(s.n * ld));
    if (overwrite) {
      GRADSYNC_ASSIGN_OR_FAIL(d_dinp, testing::Poisoned<T>(s.n * s.in));
    } else {
      GRADSYNC_ASSIGN_OR_FAIL(d_dinp, Upload<T>(dinp0));
    }
    GRADSYNC_ASSIGN_OR_FAIL(d_dw, Upload<T>(dw0));
    GRADSYNC_ASSIGN_OR_FAIL(d_db, Upload<T>(db0));
    const T* bias = with_bias ? d_bias.data() + bias_offset : nullptr;

    GRADSYNC_ASSERT_OK(
        MatmulForward<T>(*ctx_, d_out.data(), d_inp.data(), d_w.data(), bias, s.n, s.in, s.out, this->stream_, stride));
    GRADSYNC_ASSERT_OK(MatmulBackward<T>(*ctx_, d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), d_inp.data(),
                                         d_w.data(), s.n, s.in, s.out, this->stream_, stride, dinp_mode));
    ASSERT_TRUE(this->Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_out));
    std::vector<float> packed(s.n * s.out);
    for (int64_t i = 0; i < s.n; ++i) {
      std::copy_n(got.begin() + i * ld, s.out, packed.begin() + i * s.out);
      for (int64_t j = s.out; j < ld; ++j) ASSERT_TRUE(std::isnan(got[i * ld + j])) << "padding of row " << i;
    }
    EXPECT_TRUE(Close(packed, want_out, TolFor<T>(), "out"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dinp));
    EXPECT_TRUE(Close(got, want_dinp, TolFor<T>(), "dinp"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dw));
    EXPECT_TRUE(Close(got, want_dw, TolFor<T>(), "dweight"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_db));
    EXPECT_TRUE(Close(got, want_db, TolFor<T>(), "dbias"));
  }

  std::unique_ptr<MatmulContext> ctx_;
};

TYPED_TEST_SUITE(MatmulTest, testing::Dtypes);

TYPED_TEST(MatmulTest, MatchesCpuWithBias) {
  for (const Shape& s : kShapes) this->Check(s, true, 0);
}

TYPED_TEST(MatmulTest, MatchesCpuWithoutBias) {
  for (const Shape& s : kShapes) this->Check(s, false, 0);
}

TYPED_TEST(MatmulTest, MatchesCpuWithUnalignedBias) {
  this->Check({33, 65, 17}, true, 1);
  this->Check({64, 128, 96}, true, 1);
}

// Null gradient pointers are skipped; the others still accumulate.
// Output rows padded to a multiple of 64 elements, as the LM head lays out an odd vocabulary; the
// bias-rows path (unaligned bias) and the epilogue both honour the stride.
TYPED_TEST(MatmulTest, MatchesCpuWithARowStride) {
  this->Check({33, 64, 257}, false, 0, 320);
  this->Check({64, 128, 101}, true, 0, 128);
  this->Check({17, 32, 45}, true, 1, 64);
}

// Few output tiles over many rows: dweight runs as a batch of row chunks (8192 rows: 4 chunks;
// 4096: 2) whose fp32 partial products add in order, strided dout included.
TYPED_TEST(MatmulTest, MatchesCpuWithASplitDweight) {
  this->Check({8192, 64, 96}, true, 0);
  this->Check({4096, 32, 45}, false, 0, 64);
}

// dinp written over a NaN buffer (beta = 0), as the model's backward uses it; dweight and dbias
// still accumulate. With no output features the overwritten dinp is all zeros.
TYPED_TEST(MatmulTest, OverwritesDinp) {
  using T = TypeParam;
  for (const Shape& s : {Shape{7, 13, 5}, Shape{130, 77, 258}, Shape{256, 384, 192}}) {
    this->Check(s, true, 0, 0, GradMode::kOverwrite);
  }
  this->Check({33, 64, 257}, false, 0, 320, GradMode::kOverwrite);
  DeviceBuffer<T> d_dinp;
  GRADSYNC_ASSIGN_OR_FAIL(d_dinp, testing::Poisoned<T>(5 * 7));
  GRADSYNC_ASSERT_OK(MatmulBackward<T>(*this->ctx_, d_dinp.data(), nullptr, nullptr, nullptr, nullptr, nullptr, 5, 7, 0,
                                       this->stream_, 0, GradMode::kOverwrite));
  ASSERT_TRUE(this->Sync());
  std::vector<float> got;
  GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dinp));
  EXPECT_EQ(got, std::vector<float>(5 * 7, 0.0f));
}

TYPED_TEST(MatmulTest, SkipsNullGradients) {
  using T = TypeParam;
  const Shape s{9, 24, 40};
  const std::vector<float> inp = Random<T>(s.n * s.in, 11), w = Random<T>(s.out * s.in, 12);
  const std::vector<float> dout = Random<T>(s.n * s.out, 13), dw0 = Random<T>(s.out * s.in, 14);
  std::vector<float> want_dw = dw0;
  cpu::MatmulBackward<float>(nullptr, want_dw.data(), nullptr, dout.data(), inp.data(), w.data(), s.n, s.in, s.out);
  DeviceBuffer<T> d_inp, d_w, d_dout, d_dw;
  GRADSYNC_ASSIGN_OR_FAIL(d_inp, Upload<T>(inp));
  GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<T>(w));
  GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(dout));
  GRADSYNC_ASSIGN_OR_FAIL(d_dw, Upload<T>(dw0));
  GRADSYNC_ASSERT_OK(MatmulBackward<T>(*this->ctx_, nullptr, d_dw.data(), nullptr, d_dout.data(), d_inp.data(),
                                       d_w.data(), s.n, s.in, s.out, this->stream_));
  ASSERT_TRUE(this->Sync());
  std::vector<float> got;
  GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dw));
  EXPECT_TRUE(Close(got, want_dw, TolFor<T>(), "dweight"));
}

TYPED_TEST(MatmulTest, RejectsBadShapes) {
  using T = TypeParam;
  const absl::Status status =
      MatmulForward<T>(*this->ctx_, nullptr, nullptr, nullptr, nullptr, -1, 4, 4, this->stream_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("n must be >= 0"), std::string::npos) << status;
  const absl::Status null_out =
      MatmulForward<T>(*this->ctx_, nullptr, nullptr, nullptr, nullptr, 2, 4, 4, this->stream_);
  EXPECT_EQ(null_out.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(null_out.message().find("out"), std::string::npos) << null_out;
  const absl::Status short_stride =
      MatmulForward<T>(*this->ctx_, nullptr, nullptr, nullptr, nullptr, 2, 4, 4, this->stream_, 3);
  EXPECT_EQ(short_stride.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(short_stride.message().find("out_stride = 3 is less than out_features = 4"), std::string::npos)
      << short_stride;
}

// TF32 products round their inputs to 10 mantissa bits: close to fp32, not to 1e-5.
class MatmulTf32Test : public testing::CudaTest {};

TEST_F(MatmulTf32Test, MatchesCpuLoosely) {
  std::unique_ptr<MatmulContext> ctx;
  MatmulContext::Options options;
  options.allow_tf32 = true;
  GRADSYNC_ASSIGN_OR_FAIL(ctx, MatmulContext::Create(options));
  const Shape s{96, 200, 72};
  const std::vector<float> inp = Random<float>(s.n * s.in, 21), w = Random<float>(s.out * s.in, 22);
  std::vector<float> want(s.n * s.out);
  cpu::MatmulForward<float>(want.data(), inp.data(), w.data(), nullptr, s.n, s.in, s.out);
  DeviceBuffer<float> d_inp, d_w, d_out;
  GRADSYNC_ASSIGN_OR_FAIL(d_inp, Upload<float>(inp));
  GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<float>(w));
  GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<float>(s.n * s.out));
  GRADSYNC_ASSERT_OK(
      MatmulForward<float>(*ctx, d_out.data(), d_inp.data(), d_w.data(), nullptr, s.n, s.in, s.out, stream_));
  ASSERT_TRUE(Sync());
  std::vector<float> got;
  GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_out));
  EXPECT_TRUE(Close(got, want, {5e-3, 5e-2, 5e-3}, "out"));
}

}  // namespace
}  // namespace gradsync::kernels::cuda
