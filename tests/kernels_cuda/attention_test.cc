// Fused causal attention (with grouped-query heads) against kernels/cpu/attention.h.
#include "gradsync/kernels/cuda/attention.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_reference.h"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::ReferenceLse;
using testing::TolFor;
using testing::Upload;

template <typename T>
class AttentionTest : public testing::CudaTest {
 protected:
  void Check(const AttentionShape& s) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                                      << " KVH=" << s.kv_heads << " D=" << s.head_dim);
    const uint32_t seed = static_cast<uint32_t>(s.seq_len * 97 + s.heads * 13 + s.head_dim);
    const testing::AttentionCase c = testing::MakeAttentionCase<T>(s, seed);
    const std::vector<float>& qkv = c.qkv;
    const int64_t out_n = static_cast<int64_t>(c.out.size());
    const std::vector<float> want_lse = ReferenceLse(qkv, s);

    DeviceBuffer<T> d_qkv, d_out, d_dout, d_dqkv;
    DeviceBuffer<float> d_lse, d_delta;
    GRADSYNC_ASSIGN_OR_FAIL(d_qkv, Upload<T>(qkv));
    GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<T>(out_n));
    GRADSYNC_ASSIGN_OR_FAIL(d_lse, testing::Poisoned<float>(want_lse.size()));
    GRADSYNC_ASSIGN_OR_FAIL(d_delta, testing::Poisoned<float>(want_lse.size()));
    GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(c.dout));
    GRADSYNC_ASSIGN_OR_FAIL(d_dqkv, Upload<T>(c.dqkv0));

    GRADSYNC_ASSERT_OK(AttentionForward<T>(d_out.data(), d_lse.data(), d_qkv.data(), s, stream_));
    GRADSYNC_ASSERT_OK(AttentionBackward<T>(d_dqkv.data(), d_delta.data(), d_dout.data(), d_qkv.data(), d_out.data(),
                                            d_lse.data(), s, stream_));
    ASSERT_TRUE(Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_out));
    EXPECT_TRUE(Close(got, c.out, TolFor<T>(), "out"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_lse));
    EXPECT_TRUE(Close(got, want_lse, TolFor<float>(), "lse"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dqkv));
    EXPECT_TRUE(Close(got, c.dqkv, TolFor<T>(), "dqkv"));
  }
};

TYPED_TEST_SUITE(AttentionTest, testing::Dtypes);

// Sequence lengths around the 32-key tiles and 64-query blocks; one token; one batch.
TYPED_TEST(AttentionTest, MultiHeadMatchesCpu) {
  this->Check({1, 1, 1, 1, 32});
  this->Check({2, 65, 4, 4, 64});
  this->Check({1, 130, 2, 2, 128});
  this->Check({3, 31, 2, 2, 32});
}

TYPED_TEST(AttentionTest, GroupedQueryMatchesCpu) {
  this->Check({2, 37, 4, 2, 64});  // 2 query heads per kv head
  this->Check({3, 64, 6, 3, 32});
  this->Check({1, 200, 8, 1, 64});  // multi-query: one kv head for all
  this->Check({1, 97, 4, 2, 128});
}

TYPED_TEST(AttentionTest, RejectsBadShapes) {
  using T = TypeParam;
  AttentionShape bad_dim{1, 8, 2, 2, 48};
  const absl::Status dim = AttentionForward<T>(nullptr, nullptr, nullptr, bad_dim, this->stream_);
  EXPECT_EQ(dim.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dim.message().find("head_dim"), std::string::npos) << dim;
  AttentionShape bad_groups{1, 8, 4, 3, 64};
  const absl::Status groups = AttentionForward<T>(nullptr, nullptr, nullptr, bad_groups, this->stream_);
  EXPECT_EQ(groups.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(groups.message().find("kv_heads"), std::string::npos) << groups;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
