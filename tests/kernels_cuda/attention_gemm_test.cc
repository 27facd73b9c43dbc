// Attention through batched tensor-core products (attention_gemm.cuh) against
// kernels/cpu/attention.h, bf16, at the shapes the fused kernels are tested at and GPT-2's.
#include "gradsync/kernels/cuda/attention_gemm.cuh"

#include <gtest/gtest.h>

#include <vector>

#include "attention_reference.h"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::TolFor;
using testing::Upload;
using bf16 = __nv_bfloat16;

class AttentionGemmTest : public testing::CudaTest {
 protected:
  void SetUp() override {
    testing::CudaTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    GRADSYNC_ASSIGN_OR_FAIL(ctx_, MatmulContext::Create());
  }

  void Check(const AttentionShape& s) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                                      << " KVH=" << s.kv_heads << " D=" << s.head_dim);
    const uint32_t seed = static_cast<uint32_t>(s.seq_len * 89 + s.heads * 7 + s.head_dim);
    const testing::AttentionCase c = testing::MakeAttentionCase<bf16>(s, seed);
    const int64_t out_n = static_cast<int64_t>(c.out.size());

    DeviceBuffer<bf16> d_qkv, d_out, d_dout, d_dqkv, d_probs;
    DeviceBuffer<unsigned char> d_scratch;
    GRADSYNC_ASSIGN_OR_FAIL(d_qkv, Upload<bf16>(c.qkv));
    GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<bf16>(out_n));
    GRADSYNC_ASSIGN_OR_FAIL(d_probs, testing::Poisoned<bf16>(AttentionGemmProbsCount(s)));
    GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<unsigned char>::Allocate(AttentionGemmScratchBytes(s)));
    GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<bf16>(c.dout));
    GRADSYNC_ASSIGN_OR_FAIL(d_dqkv, Upload<bf16>(c.dqkv0));

    GRADSYNC_ASSERT_OK(AttentionGemmForward(*ctx_, d_out.data(), d_probs.data(), d_qkv.data(), s, d_scratch.data(),
                                            d_scratch.size(), stream_));
    GRADSYNC_ASSERT_OK(AttentionGemmBackward(*ctx_, d_dqkv.data(), d_dout.data(), d_qkv.data(), d_probs.data(), s,
                                             d_scratch.data(), d_scratch.size(), stream_));
    ASSERT_TRUE(Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_out));
    // The output multiplies v by P rounded to bf16, then rounds itself: two roundings. Each term
    // p v errs by up to 2^-9 p |v|, so a short row (two keys at t = 1) can miss by 2^-9 max|v|,
    // more than one rounding of its small output allows.
    const testing::Tolerance two_roundings{2e-2, 4e-2, 2e-2};
    EXPECT_TRUE(Close(got, c.out, two_roundings, "out"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_probs));
    EXPECT_TRUE(Close(got, c.probs, TolFor<bf16>(), "probs"));
    // The backward rounds P and dS to bf16, and dq, dk, dv round as each head's product adds into
    // dqkv: twice the bounds of one rounding.
    const testing::Tolerance backward{2e-2, 4e-2, 2e-2};
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dqkv));
    EXPECT_TRUE(Close(got, c.dqkv, backward, "dqkv"));
  }

  std::unique_ptr<MatmulContext> ctx_;
};

TEST_F(AttentionGemmTest, MultiHeadMatchesCpu) {
  Check({1, 1, 1, 1, 32});
  Check({2, 65, 4, 4, 64});
  Check({1, 130, 2, 2, 128});
  Check({3, 31, 2, 2, 32});
}

TEST_F(AttentionGemmTest, GroupedQueryMatchesCpu) {
  Check({2, 37, 4, 2, 64});
  Check({3, 64, 6, 3, 32});
  Check({1, 200, 8, 1, 64});
}

TEST_F(AttentionGemmTest, Gpt2ShapeMatchesCpu) { Check({1, 1024, 12, 12, 64}); }

TEST_F(AttentionGemmTest, RejectsBadShapesAndShortScratch) {
  const AttentionShape bad_dim{1, 8, 2, 2, 48};
  int dummy = 0;
  bf16* p = reinterpret_cast<bf16*>(&dummy);
  const absl::Status dim = AttentionGemmForward(*ctx_, p, p, p, bad_dim, &dummy, 1 << 20, stream_);
  EXPECT_EQ(dim.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dim.message().find("head_dim"), std::string::npos) << dim;
  const AttentionShape ok{1, 8, 2, 2, 32};
  const absl::Status small = AttentionGemmForward(*ctx_, p, p, p, ok, &dummy, 16, stream_);
  EXPECT_EQ(small.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(small.message().find("scratch"), std::string::npos) << small;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
