// The tensor-core attention kernels (kernels/cuda/src/flash_attention_*.cuh), compiled for the
// host and run under the warp emulation, against kernels/cpu/attention.h: the same cases and
// tolerances as tests/kernels_cuda/flash_attention_test.cc, which runs them on a GPU. No GPU
// needed: this runs everywhere, CI included.
#include "warp_emulation.h"  // first: redefines the CUDA keywords for the kernels below

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_reference.h"
#include "flash_attention_backward.cuh"
#include "flash_attention_forward.cuh"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using bf16 = __nv_bfloat16;
using emulation::Dim3;

std::vector<bf16> ToBf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16_rn(v[i]);
  return out;
}
std::vector<float> ToFloat(const std::vector<bf16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

// kAccumulate: the backward kernels add into dqkv0; otherwise they write over a NaN dqkv.
template <int D, bool kAccumulate>
void Run(const AttentionShape& s, const testing::AttentionCase& c, testing::FlashResults* r) {
  using namespace internal;
  const AttnDims dims = DimsOf(s);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const Dim3 grid{static_cast<unsigned>(CeilDiv(s.seq_len, kFlashRows)), static_cast<unsigned>(s.heads),
                  static_cast<unsigned>(s.batch)};
  const Dim3 kv_grid{grid.x, static_cast<unsigned>(s.kv_heads), grid.z};
  const std::vector<bf16> qkv = ToBf16(c.qkv), dout = ToBf16(c.dout);
  std::vector<bf16> out(c.out.size(), __float2bfloat16_rn(NAN));
  std::vector<bf16> dqkv = kAccumulate ? ToBf16(c.dqkv0) : std::vector<bf16>(c.dqkv0.size(), __float2bfloat16_rn(NAN));
  const size_t stats = static_cast<size_t>(s.batch * s.heads * s.seq_len);
  std::vector<float> lse(stats, NAN), delta(stats, NAN);

  emulation::Launch(grid, kFlashThreads, ForwardSmemBytes<D>(),
                    [&] { FlashForwardKernel<D>(out.data(), lse.data(), qkv.data(), dims, kLog2e * scale); });
  const Params prm{dims, kLog2e * scale, scale};
  emulation::Launch(grid, kFlashThreads, DqSmemBytes<D>(), [&] {
    FlashDqKernel<D, kAccumulate>(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(), lse.data(), prm);
  });
  emulation::Launch(kv_grid, kFlashThreads, DkvSmemBytes<D>(), [&] {
    FlashDkvKernel<D, kAccumulate>(dqkv.data(), dout.data(), qkv.data(), lse.data(), delta.data(), prm);
  });
  r->out = ToFloat(out);
  r->lse = lse;
  r->delta = delta;
  r->dqkv = ToFloat(dqkv);
}

// Every case twice: with the tile copies landing as they are issued, and only when waited for;
// the backward adds into dqkv the first time and writes over it the second.
void Check(const AttentionShape& s) {
  const uint32_t seed = static_cast<uint32_t>(s.seq_len * 71 + s.heads * 5 + s.head_dim);
  for (const emulation::CopyLanding landing : {emulation::CopyLanding::kAtIssue, emulation::CopyLanding::kAtWait}) {
    const bool accumulate = landing == emulation::CopyLanding::kAtIssue;
    SCOPED_TRACE(::testing::Message() << "B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                                      << " KVH=" << s.kv_heads << " D=" << s.head_dim << " copies land "
                                      << (accumulate ? "at issue, dqkv accumulated" : "at wait, dqkv overwritten"));
    emulation::copy_landing = landing;
    const testing::AttentionCase c = testing::MakeAttentionCase<bf16>(s, seed, !accumulate);
    testing::FlashResults r;
    if (s.head_dim == 32) {
      accumulate ? Run<32, true>(s, c, &r) : Run<32, false>(s, c, &r);
    } else {
      accumulate ? Run<64, true>(s, c, &r) : Run<64, false>(s, c, &r);
    }
    testing::ExpectFlashMatchesCpu(s, c, r);
  }
}

TEST(FlashAttentionEmulatedTest, OneTokenAndShortRows) {
  Check({1, 1, 1, 1, 32});
  Check({2, 31, 2, 2, 32});
}

TEST(FlashAttentionEmulatedTest, RaggedTilesMatchCpu) {
  Check({2, 65, 2, 2, 64});
  Check({1, 130, 2, 2, 64});
  Check({1, 128, 1, 1, 32});
}

TEST(FlashAttentionEmulatedTest, GroupedQueryMatchesCpu) {
  Check({2, 37, 4, 2, 64});
  Check({1, 150, 4, 1, 32});
}

}  // namespace
}  // namespace gradsync::kernels::cuda
