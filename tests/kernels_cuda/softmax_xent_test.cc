// Fused softmax + cross-entropy against kernels/cpu/softmax_xent.h.
#include "gradsync/kernels/cuda/softmax_xent.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gradsync/kernels/cpu/softmax_xent.h"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::Random;
using testing::TolFor;
using testing::Upload;

// Targets in [0, v), about one row in five ignored (-1), the first row never.
std::vector<int32_t> Targets(int64_t n, int64_t v, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(v - 1));
  std::uniform_int_distribution<int> ignore(0, 4);
  std::vector<int32_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = (i > 0 && ignore(rng) == 0) ? -1 : pick(rng);
  return out;
}

template <typename T>
class SoftmaxXentTest : public testing::CudaTest {
 protected:
  // Rows `stride` elements apart (0: packed); the padding holds NaN, which must be neither read
  // nor overwritten.
  void Check(int64_t n, int64_t v, bool in_place, int64_t stride = 0) {
    SCOPED_TRACE(::testing::Message() << "n=" << n << " v=" << v << " in_place=" << in_place << " stride=" << stride);
    const int64_t ld = stride == 0 ? v : stride;
    const uint32_t seed = static_cast<uint32_t>(n * 7 + v);
    const std::vector<float> logits = Random<T>(n * v, seed, -8.0f, 8.0f);
    const std::vector<int32_t> targets = Targets(n, v, seed + 1);
    int64_t count = 0;
    for (const int32_t t : targets) count += t != -1;
    const float scale = 1.0f / static_cast<float>(count);
    std::vector<float> want_dz(n * v);
    const cpu::XentSum want = cpu::SoftmaxCrossEntropy(want_dz.data(), logits.data(), targets.data(), n, v, scale);
    ASSERT_EQ(want.count, count);

    DeviceBuffer<T> d_logits, d_dz;
    DeviceBuffer<int32_t> d_targets;
    DeviceBuffer<float> d_loss;
    DeviceBuffer<double> d_sum;
    DeviceBuffer<int64_t> d_count;
    std::vector<float> rows(n * ld, std::numeric_limits<float>::quiet_NaN());
    for (int64_t i = 0; i < n; ++i) std::copy_n(logits.begin() + i * v, v, rows.begin() + i * ld);
    GRADSYNC_ASSIGN_OR_FAIL(d_logits, Upload<T>(rows));
    GRADSYNC_ASSIGN_OR_FAIL(d_dz, testing::Poisoned<T>(n * ld));
    GRADSYNC_ASSIGN_OR_FAIL(d_targets, DeviceBuffer<int32_t>::FromHost(targets));
    GRADSYNC_ASSIGN_OR_FAIL(d_loss, testing::Poisoned<float>(n));
    GRADSYNC_ASSIGN_OR_FAIL(d_sum, DeviceBuffer<double>::Allocate(1));
    GRADSYNC_ASSIGN_OR_FAIL(d_count, DeviceBuffer<int64_t>::Allocate(1));
    T* dz = in_place ? d_logits.data() : d_dz.data();
    GRADSYNC_ASSERT_OK(SoftmaxCrossEntropy<T>(dz, d_loss.data(), d_logits.data(), d_targets.data(), n, v, scale,
                                              kXentIgnoreIndex, stream_, stride));
    GRADSYNC_ASSERT_OK(
        XentLossSum(d_sum.data(), d_count.data(), d_loss.data(), d_targets.data(), n, kXentIgnoreIndex, stream_));
    ASSERT_TRUE(Sync());
    std::vector<double> sum;
    std::vector<int64_t> got_count;
    GRADSYNC_ASSIGN_OR_FAIL(sum, d_sum.ToHost());
    GRADSYNC_ASSIGN_OR_FAIL(got_count, d_count.ToHost());
    EXPECT_EQ(got_count[0], count);
    // Per-row losses are fp32 on the GPU (logits rounded identically on both sides).
    EXPECT_NEAR(sum[0], want.loss_sum, 1e-5 * std::max(1.0, std::abs(want.loss_sum)));
    std::vector<float> got_rows;
    GRADSYNC_ASSIGN_OR_FAIL(got_rows, Download(in_place ? d_logits : d_dz));
    std::vector<float> got(n * v);
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(got_rows.begin() + i * ld, v, got.begin() + i * v);
      for (int64_t j = v; j < ld; ++j) ASSERT_TRUE(std::isnan(got_rows[i * ld + j])) << "padding of row " << i;
    }
    EXPECT_TRUE(Close(got, want_dz, TolFor<T>(), "dlogits"));
  }
};

TYPED_TEST_SUITE(SoftmaxXentTest, testing::Dtypes);

TYPED_TEST(SoftmaxXentTest, MatchesCpu) {
  this->Check(1, 1, false);
  this->Check(4, 10, false);
  this->Check(7, 517, false);
  this->Check(33, 1000, false);
  this->Check(3, 50257, false);  // GPT-2's vocabulary: 98 elements per thread
}

TYPED_TEST(SoftmaxXentTest, MatchesCpuInPlace) { this->Check(9, 777, true); }

// Padded rows, as the LM head's logits are laid out: a stride of whole 16-byte packs (the packed
// loads) and one that is not (element by element), out of place and in place.
TYPED_TEST(SoftmaxXentTest, MatchesCpuWithARowStride) {
  this->Check(5, 1001, false, 1024);
  this->Check(6, 250, true, 256);
  this->Check(4, 99, false, 101);
  this->Check(3, 50257, true, 50304);
}

// Loss only (no gradient), and every row ignored.
TYPED_TEST(SoftmaxXentTest, LossOnlyAndAllIgnored) {
  using T = TypeParam;
  const int64_t n = 3, v = 11;
  const std::vector<float> logits = Random<T>(n * v, 5);
  const std::vector<int32_t> targets = {-1, -1, -1};
  DeviceBuffer<T> d_logits;
  DeviceBuffer<int32_t> d_targets;
  DeviceBuffer<float> d_loss;
  DeviceBuffer<double> d_sum;
  DeviceBuffer<int64_t> d_count;
  GRADSYNC_ASSIGN_OR_FAIL(d_logits, Upload<T>(logits));
  GRADSYNC_ASSIGN_OR_FAIL(d_targets, DeviceBuffer<int32_t>::FromHost(targets));
  GRADSYNC_ASSIGN_OR_FAIL(d_loss, testing::Poisoned<float>(n));
  GRADSYNC_ASSIGN_OR_FAIL(d_sum, DeviceBuffer<double>::Allocate(1));
  GRADSYNC_ASSIGN_OR_FAIL(d_count, DeviceBuffer<int64_t>::Allocate(1));
  GRADSYNC_ASSERT_OK(SoftmaxCrossEntropy<T>(nullptr, d_loss.data(), d_logits.data(), d_targets.data(), n, v, 1.0f,
                                            kXentIgnoreIndex, this->stream_));
  GRADSYNC_ASSERT_OK(
      XentLossSum(d_sum.data(), d_count.data(), d_loss.data(), d_targets.data(), n, kXentIgnoreIndex, this->stream_));
  ASSERT_TRUE(this->Sync());
  std::vector<float> loss;
  GRADSYNC_ASSIGN_OR_FAIL(loss, d_loss.ToHost());
  EXPECT_EQ(loss, std::vector<float>(n, 0.0f));
  std::vector<double> sum;
  std::vector<int64_t> count;
  GRADSYNC_ASSIGN_OR_FAIL(sum, d_sum.ToHost());
  GRADSYNC_ASSIGN_OR_FAIL(count, d_count.ToHost());
  EXPECT_EQ(sum[0], 0.0);
  EXPECT_EQ(count[0], 0);
  // A row stride shorter than a row is refused, naming both.
  const absl::Status short_stride = SoftmaxCrossEntropy<T>(nullptr, d_loss.data(), d_logits.data(), d_targets.data(), n,
                                                           v, 1.0f, kXentIgnoreIndex, this->stream_, v - 1);
  EXPECT_TRUE(absl::IsInvalidArgument(short_stride)) << short_stride;
  EXPECT_NE(short_stride.message().find("stride = 10 is less than v = 11"), std::string::npos) << short_stride;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
