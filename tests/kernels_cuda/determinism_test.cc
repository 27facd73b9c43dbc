// The reductions that could depend on scheduling (embedding backward with repeated tokens,
// LayerNorm's dweight/dbias, the global norm, attention's dK/dV over a head group, dbias) give
// bitwise identical results when run twice on the same inputs.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "gradsync/kernels/cuda/attention.cuh"
#include "gradsync/kernels/cuda/encoder.cuh"
#include "gradsync/kernels/cuda/global_norm.cuh"
#include "gradsync/kernels/cuda/layernorm.cuh"
#include "gradsync/kernels/cuda/matmul.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Bitwise;
using testing::Random;
using testing::Upload;

template <typename T>
class DeterminismTest : public testing::CudaTest {};
TYPED_TEST_SUITE(DeterminismTest, testing::Dtypes);

TYPED_TEST(DeterminismTest, EncoderBackward) {
  using T = TypeParam;
  const int64_t batch = 16, seq_len = 256, channels = 192, vocab = 37;  // each token ~110 times
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> tokens(batch * seq_len);
  for (int32_t& t : tokens) t = pick(rng);
  const std::vector<float> dout = Random<T>(batch * seq_len * channels, 4);
  DeviceBuffer<int32_t> d_tokens;
  DeviceBuffer<T> d_dout;
  DeviceBuffer<char> d_scratch;
  GRADSYNC_ASSIGN_OR_FAIL(d_tokens, DeviceBuffer<int32_t>::FromHost(tokens));
  GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(dout));
  size_t scratch_bytes = 0;
  GRADSYNC_ASSIGN_OR_FAIL(scratch_bytes, EncoderBackwardScratchBytes(batch * seq_len, vocab));
  GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<char>::Allocate(scratch_bytes));
  std::vector<T> runs[2][2];
  for (auto& run : runs) {
    DeviceBuffer<T> d_dwte, d_dwpe;
    GRADSYNC_ASSIGN_OR_FAIL(d_dwte, Upload<T>(std::vector<float>(vocab * channels, 0.5f)));
    GRADSYNC_ASSIGN_OR_FAIL(d_dwpe, Upload<T>(std::vector<float>(seq_len * channels, 0.5f)));
    GRADSYNC_ASSERT_OK(EncoderBackward<T>(d_dwte.data(), d_dwpe.data(), d_dout.data(), d_tokens.data(), batch, seq_len,
                                          channels, vocab, d_scratch.data(), scratch_bytes, this->stream_));
    ASSERT_TRUE(this->Sync());
    GRADSYNC_ASSIGN_OR_FAIL(run[0], d_dwte.ToHost());
    GRADSYNC_ASSIGN_OR_FAIL(run[1], d_dwpe.ToHost());
  }
  EXPECT_TRUE(Bitwise(runs[0][0], runs[1][0], "dwte"));
  EXPECT_TRUE(Bitwise(runs[0][1], runs[1][1], "dwpe"));
}

TYPED_TEST(DeterminismTest, LayerNormBackward) {
  using T = TypeParam;
  const int64_t n = 4096, c = 384;  // many row chunks per column block
  const std::vector<float> x = Random<T>(n * c, 5), w = Random<T>(c, 6), dy = Random<T>(n * c, 7);
  const std::vector<float> mean = Random<float>(n, 8), rstd = Random<float>(n, 9, 0.5f, 2.0f);
  DeviceBuffer<T> d_x, d_w, d_dy;
  DeviceBuffer<float> d_mean, d_rstd, d_scratch;
  GRADSYNC_ASSIGN_OR_FAIL(d_x, Upload<T>(x));
  GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<T>(w));
  GRADSYNC_ASSIGN_OR_FAIL(d_dy, Upload<T>(dy));
  GRADSYNC_ASSIGN_OR_FAIL(d_mean, Upload<float>(mean));
  GRADSYNC_ASSIGN_OR_FAIL(d_rstd, Upload<float>(rstd));
  const int64_t scratch_floats = LayerNormBackwardScratchFloats(n, c);
  ASSERT_GT(scratch_floats, 0);  // the two-pass path is the one under test
  GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<float>::Allocate(scratch_floats));
  std::vector<T> runs[2][3];
  for (auto& run : runs) {
    DeviceBuffer<T> d_dx, d_dw, d_db;
    GRADSYNC_ASSIGN_OR_FAIL(d_dx, Upload<T>(std::vector<float>(n * c, 0.0f)));
    GRADSYNC_ASSIGN_OR_FAIL(d_dw, Upload<T>(std::vector<float>(c, 0.0f)));
    GRADSYNC_ASSIGN_OR_FAIL(d_db, Upload<T>(std::vector<float>(c, 0.0f)));
    GRADSYNC_ASSERT_OK(LayerNormBackward<T>(d_dx.data(), d_dw.data(), d_db.data(), d_dy.data(), d_x.data(), d_w.data(),
                                            d_mean.data(), d_rstd.data(), n, c, d_scratch.data(), scratch_floats,
                                            this->stream_));
    ASSERT_TRUE(this->Sync());
    GRADSYNC_ASSIGN_OR_FAIL(run[0], d_dx.ToHost());
    GRADSYNC_ASSIGN_OR_FAIL(run[1], d_dw.ToHost());
    GRADSYNC_ASSIGN_OR_FAIL(run[2], d_db.ToHost());
  }
  EXPECT_TRUE(Bitwise(runs[0][0], runs[1][0], "dinp"));
  EXPECT_TRUE(Bitwise(runs[0][1], runs[1][1], "dweight"));
  EXPECT_TRUE(Bitwise(runs[0][2], runs[1][2], "dbias"));
}

TYPED_TEST(DeterminismTest, GlobalNorm) {
  using T = TypeParam;
  const int64_t n = (int64_t{1} << 22) + 17;
  DeviceBuffer<T> d_grads;
  DeviceBuffer<float> d_norm_sq, d_scratch;
  GRADSYNC_ASSIGN_OR_FAIL(d_grads, Upload<T>(Random<T>(n, 10)));
  GRADSYNC_ASSIGN_OR_FAIL(d_norm_sq, DeviceBuffer<float>::Allocate(1));
  GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<float>::Allocate(kGlobalNormPartials));
  std::vector<float> runs[2];
  for (auto& run : runs) {
    GRADSYNC_ASSERT_OK(
        GlobalNormSquared<T>(d_norm_sq.data(), d_grads.data(), n, false, d_scratch.data(), this->stream_));
    ASSERT_TRUE(this->Sync());
    GRADSYNC_ASSIGN_OR_FAIL(run, d_norm_sq.ToHost());
  }
  EXPECT_TRUE(Bitwise(runs[0], runs[1], "norm_sq"));
}

TYPED_TEST(DeterminismTest, AttentionBackward) {
  using T = TypeParam;
  const AttentionShape s{2, 200, 8, 2, 64};  // 4 query heads into every dK/dV
  const int64_t qkv_n = s.batch * s.seq_len * s.qkv_width();
  const int64_t out_n = s.batch * s.seq_len * s.out_width();
  DeviceBuffer<T> d_qkv, d_out, d_dout;
  DeviceBuffer<float> d_lse, d_delta;
  GRADSYNC_ASSIGN_OR_FAIL(d_qkv, Upload<T>(Random<T>(qkv_n, 11, -2.0f, 2.0f)));
  GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(Random<T>(out_n, 12)));
  GRADSYNC_ASSIGN_OR_FAIL(d_out, DeviceBuffer<T>::Allocate(out_n));
  GRADSYNC_ASSIGN_OR_FAIL(d_lse, DeviceBuffer<float>::Allocate(s.batch * s.heads * s.seq_len));
  GRADSYNC_ASSIGN_OR_FAIL(d_delta, DeviceBuffer<float>::Allocate(s.batch * s.heads * s.seq_len));
  GRADSYNC_ASSERT_OK(AttentionForward<T>(d_out.data(), d_lse.data(), d_qkv.data(), s, this->stream_));
  std::vector<T> runs[2];
  for (auto& run : runs) {
    DeviceBuffer<T> d_dqkv;
    GRADSYNC_ASSIGN_OR_FAIL(d_dqkv, Upload<T>(std::vector<float>(qkv_n, 0.0f)));
    GRADSYNC_ASSERT_OK(AttentionBackward<T>(d_dqkv.data(), d_delta.data(), d_dout.data(), d_qkv.data(), d_out.data(),
                                            d_lse.data(), s, this->stream_));
    ASSERT_TRUE(this->Sync());
    GRADSYNC_ASSIGN_OR_FAIL(run, d_dqkv.ToHost());
  }
  EXPECT_TRUE(Bitwise(runs[0], runs[1], "dqkv"));
}

TYPED_TEST(DeterminismTest, MatmulBackward) {
  using T = TypeParam;
  const int64_t n = 2048, in = 256, out = 320;
  std::unique_ptr<MatmulContext> ctx;
  GRADSYNC_ASSIGN_OR_FAIL(ctx, MatmulContext::Create());
  DeviceBuffer<T> d_inp, d_w, d_dout;
  GRADSYNC_ASSIGN_OR_FAIL(d_inp, Upload<T>(Random<T>(n * in, 13)));
  GRADSYNC_ASSIGN_OR_FAIL(d_w, Upload<T>(Random<T>(out * in, 14)));
  GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(Random<T>(n * out, 15)));
  std::vector<T> runs[2][3];
  for (auto& run : runs) {
    DeviceBuffer<T> d_dinp, d_dw, d_db;
    GRADSYNC_ASSIGN_OR_FAIL(d_dinp, Upload<T>(std::vector<float>(n * in, 0.0f)));
    GRADSYNC_ASSIGN_OR_FAIL(d_dw, Upload<T>(std::vector<float>(out * in, 0.0f)));
    GRADSYNC_ASSIGN_OR_FAIL(d_db, Upload<T>(std::vector<float>(out, 0.0f)));
    GRADSYNC_ASSERT_OK(MatmulBackward<T>(*ctx, d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), d_inp.data(),
                                         d_w.data(), n, in, out, this->stream_));
    ASSERT_TRUE(this->Sync());
    GRADSYNC_ASSIGN_OR_FAIL(run[0], d_dinp.ToHost());
    GRADSYNC_ASSIGN_OR_FAIL(run[1], d_dw.ToHost());
    GRADSYNC_ASSIGN_OR_FAIL(run[2], d_db.ToHost());
  }
  EXPECT_TRUE(Bitwise(runs[0][0], runs[1][0], "dinp"));
  EXPECT_TRUE(Bitwise(runs[0][1], runs[1][1], "dweight"));
  EXPECT_TRUE(Bitwise(runs[0][2], runs[1][2], "dbias"));
}

}  // namespace
}  // namespace gradsync::kernels::cuda
