// Tensor-core attention (flash_attention.cuh) against kernels/cpu/attention.h, bf16: ragged
// lengths around the 64-row tiles, grouped queries, both head dims, GPT-2's shape; bitwise
// repeatable; bad arguments refused.
#include "gradsync/kernels/cuda/flash_attention.cuh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention_reference.h"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Download;
using testing::Upload;
using bf16 = __nv_bfloat16;

class FlashAttentionTest : public testing::CudaTest {
 protected:
  void SetUp() override {
    testing::CudaTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!FlashAttentionDeviceSupported()) GTEST_SKIP() << "the device is older than compute capability 8.0";
  }

  // Forward, then backward on the forward's out and lse, as the model runs them. Overwriting,
  // dqkv starts as NaN.
  void Run(const AttentionShape& s, const testing::AttentionCase& c, testing::FlashResults* r,
           GradMode mode = GradMode::kAccumulate) {
    DeviceBuffer<bf16> d_qkv, d_out, d_dout, d_dqkv;
    DeviceBuffer<float> d_lse, d_delta;
    const size_t stats = static_cast<size_t>(s.batch * s.heads * s.seq_len);
    GRADSYNC_ASSIGN_OR_FAIL(d_qkv, Upload<bf16>(c.qkv));
    GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<bf16>(c.out.size()));
    GRADSYNC_ASSIGN_OR_FAIL(d_lse, testing::Poisoned<float>(stats));
    GRADSYNC_ASSIGN_OR_FAIL(d_delta, testing::Poisoned<float>(stats));
    GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<bf16>(c.dout));
    if (mode == GradMode::kOverwrite) {
      GRADSYNC_ASSIGN_OR_FAIL(d_dqkv, testing::Poisoned<bf16>(c.dqkv0.size()));
    } else {
      GRADSYNC_ASSIGN_OR_FAIL(d_dqkv, Upload<bf16>(c.dqkv0));
    }
    GRADSYNC_ASSERT_OK(FlashAttentionForward(d_out.data(), d_lse.data(), d_qkv.data(), s, stream_));
    GRADSYNC_ASSERT_OK(FlashAttentionBackward(d_dqkv.data(), d_delta.data(), d_dout.data(), d_qkv.data(), d_out.data(),
                                              d_lse.data(), s, stream_, mode));
    ASSERT_TRUE(Sync());
    GRADSYNC_ASSIGN_OR_FAIL(r->out, Download(d_out));
    GRADSYNC_ASSIGN_OR_FAIL(r->lse, Download(d_lse));
    GRADSYNC_ASSIGN_OR_FAIL(r->delta, Download(d_delta));
    GRADSYNC_ASSIGN_OR_FAIL(r->dqkv, Download(d_dqkv));
  }

  void Check(const AttentionShape& s, GradMode mode = GradMode::kAccumulate) {
    const bool overwrite = mode == GradMode::kOverwrite;
    SCOPED_TRACE(::testing::Message() << "B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                                      << " KVH=" << s.kv_heads << " D=" << s.head_dim << " overwrite=" << overwrite);
    const uint32_t seed = static_cast<uint32_t>(s.seq_len * 71 + s.heads * 5 + s.head_dim);
    const testing::AttentionCase c = testing::MakeAttentionCase<bf16>(s, seed, overwrite);
    testing::FlashResults r;
    ASSERT_NO_FATAL_FAILURE(Run(s, c, &r, mode));
    testing::ExpectFlashMatchesCpu(s, c, r);
  }
};

TEST_F(FlashAttentionTest, MultiHeadMatchesCpu) {
  Check({1, 1, 1, 1, 32});
  Check({2, 65, 4, 4, 64});
  Check({3, 31, 2, 2, 32});
  Check({1, 128, 2, 2, 64});
  Check({2, 130, 3, 3, 64});
}

TEST_F(FlashAttentionTest, GroupedQueryMatchesCpu) {
  Check({2, 37, 4, 2, 64});
  Check({3, 64, 6, 3, 32});
  Check({1, 200, 8, 1, 64});
  Check({1, 193, 8, 2, 32});
}

TEST_F(FlashAttentionTest, Gpt2ShapeMatchesCpu) { Check({1, 1024, 12, 12, 64}); }

// dqkv written, not added to: every element of a NaN buffer must come out as the gradient.
TEST_F(FlashAttentionTest, OverwritesDqkv) {
  Check({2, 65, 4, 4, 64}, GradMode::kOverwrite);
  Check({1, 193, 8, 2, 32}, GradMode::kOverwrite);
}

TEST_F(FlashAttentionTest, RepeatsBitwise) {
  const AttentionShape s{2, 150, 4, 2, 64};
  const testing::AttentionCase c = testing::MakeAttentionCase<bf16>(s, 11);
  testing::FlashResults first, second;
  ASSERT_NO_FATAL_FAILURE(Run(s, c, &first));
  ASSERT_NO_FATAL_FAILURE(Run(s, c, &second));
  EXPECT_EQ(first.out, second.out);
  EXPECT_EQ(first.lse, second.lse);
  EXPECT_EQ(first.dqkv, second.dqkv);
}

TEST_F(FlashAttentionTest, RejectsUnsupportedHeadDimsAndMisalignedBuffers) {
  DeviceBuffer<bf16> buf;
  DeviceBuffer<float> stats;
  GRADSYNC_ASSIGN_OR_FAIL(buf, DeviceBuffer<bf16>::Allocate(1 << 16));
  GRADSYNC_ASSIGN_OR_FAIL(stats, DeviceBuffer<float>::Allocate(1 << 10));
  const absl::Status dim = FlashAttentionForward(buf.data(), stats.data(), buf.data(), {1, 8, 2, 2, 128}, stream_);
  EXPECT_EQ(dim.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dim.message().find("head_dim"), std::string::npos) << dim;
  EXPECT_FALSE(FlashAttentionSupports({1, 8, 2, 2, 128}));
  const absl::Status aligned =
      FlashAttentionForward(buf.data(), stats.data(), buf.data() + 1, {1, 8, 2, 2, 64}, stream_);
  EXPECT_EQ(aligned.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(aligned.message().find("qkv must be 16-byte aligned"), std::string::npos) << aligned;
  const absl::Status null = FlashAttentionBackward(buf.data(), nullptr, buf.data(), buf.data(), buf.data(),
                                                   stats.data(), {1, 8, 2, 2, 64}, stream_);
  EXPECT_EQ(null.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(null.message().find("delta"), std::string::npos) << null;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
