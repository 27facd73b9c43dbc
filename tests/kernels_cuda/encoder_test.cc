// Token and position embeddings against kernels/cpu/encoder.h.
#include "gradsync/kernels/cuda/encoder.cuh"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gradsync/kernels/cpu/encoder.h"
#include "test_util.h"

namespace gradsync::kernels::cuda {
namespace {

using testing::Close;
using testing::Download;
using testing::Random;
using testing::TolFor;
using testing::Upload;

std::vector<int32_t> Tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = pick(rng);
  return out;
}

struct Shape {
  int64_t batch, seq_len, channels, vocab;
};

template <typename T>
class EncoderTest : public testing::CudaTest {
 protected:
  void Check(const Shape& s, bool with_wpe) {
    SCOPED_TRACE(::testing::Message() << "B=" << s.batch << " T=" << s.seq_len << " C=" << s.channels
                                      << " V=" << s.vocab << " wpe=" << with_wpe);
    const uint32_t seed = static_cast<uint32_t>(s.batch * 101 + s.seq_len * 7 + s.channels);
    const int64_t n = s.batch * s.seq_len;
    const std::vector<int32_t> tokens = Tokens(n, s.vocab, seed);
    const std::vector<float> wte = Random<T>(s.vocab * s.channels, seed + 1);
    const std::vector<float> wpe = Random<T>(s.seq_len * s.channels, seed + 2);
    const std::vector<float> dout = Random<T>(n * s.channels, seed + 3);
    const std::vector<float> dwte0 = Random<T>(s.vocab * s.channels, seed + 4);
    const std::vector<float> dwpe0 = Random<T>(s.seq_len * s.channels, seed + 5);
    std::vector<float> want_out(n * s.channels), want_dwte = dwte0, want_dwpe = dwpe0;
    cpu::EncoderForward(want_out.data(), tokens.data(), wte.data(), with_wpe ? wpe.data() : nullptr, s.batch, s.seq_len,
                        s.channels);
    cpu::EncoderBackward(want_dwte.data(), with_wpe ? want_dwpe.data() : nullptr, dout.data(), tokens.data(), s.batch,
                         s.seq_len, s.channels);

    DeviceBuffer<int32_t> d_tokens;
    DeviceBuffer<T> d_wte, d_wpe, d_out, d_dout, d_dwte, d_dwpe;
    DeviceBuffer<char> d_scratch;
    GRADSYNC_ASSIGN_OR_FAIL(d_tokens, DeviceBuffer<int32_t>::FromHost(tokens));
    GRADSYNC_ASSIGN_OR_FAIL(d_wte, Upload<T>(wte));
    GRADSYNC_ASSIGN_OR_FAIL(d_wpe, Upload<T>(wpe));
    GRADSYNC_ASSIGN_OR_FAIL(d_out, testing::Poisoned<T>(n * s.channels));
    GRADSYNC_ASSIGN_OR_FAIL(d_dout, Upload<T>(dout));
    GRADSYNC_ASSIGN_OR_FAIL(d_dwte, Upload<T>(dwte0));
    GRADSYNC_ASSIGN_OR_FAIL(d_dwpe, Upload<T>(dwpe0));
    size_t scratch_bytes = 0;
    GRADSYNC_ASSIGN_OR_FAIL(scratch_bytes, EncoderBackwardScratchBytes(n, s.vocab));
    GRADSYNC_ASSIGN_OR_FAIL(d_scratch, DeviceBuffer<char>::Allocate(scratch_bytes));

    GRADSYNC_ASSERT_OK(EncoderForward<T>(d_out.data(), d_tokens.data(), d_wte.data(), with_wpe ? d_wpe.data() : nullptr,
                                         s.batch, s.seq_len, s.channels, s.vocab, stream_));
    GRADSYNC_ASSERT_OK(EncoderBackward<T>(d_dwte.data(), with_wpe ? d_dwpe.data() : nullptr, d_dout.data(),
                                          d_tokens.data(), s.batch, s.seq_len, s.channels, s.vocab, d_scratch.data(),
                                          scratch_bytes, stream_));
    ASSERT_TRUE(Sync());
    std::vector<float> got;
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_out));
    EXPECT_TRUE(Close(got, want_out, TolFor<T>(), "out"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dwte));
    EXPECT_TRUE(Close(got, want_dwte, TolFor<T>(), "dwte"));
    GRADSYNC_ASSIGN_OR_FAIL(got, Download(d_dwpe));
    EXPECT_TRUE(Close(got, with_wpe ? want_dwpe : dwpe0, TolFor<T>(), "dwpe"));
  }
};

TYPED_TEST_SUITE(EncoderTest, testing::Dtypes);

// Small vocabularies repeat tokens many times (long runs for one owner); one token; odd widths.
TYPED_TEST(EncoderTest, MatchesCpu) {
  for (const bool with_wpe : {true, false}) {
    this->Check({1, 1, 1, 1}, with_wpe);
    this->Check({2, 5, 7, 3}, with_wpe);
    this->Check({4, 64, 96, 50}, with_wpe);
    this->Check({3, 33, 130, 1000}, with_wpe);
    this->Check({8, 128, 64, 50257}, with_wpe);
  }
}

TYPED_TEST(EncoderTest, RejectsTooLittleScratch) {
  using T = TypeParam;
  DeviceBuffer<char> scratch;
  GRADSYNC_ASSIGN_OR_FAIL(scratch, DeviceBuffer<char>::Allocate(16));
  DeviceBuffer<T> buf;
  GRADSYNC_ASSIGN_OR_FAIL(buf, DeviceBuffer<T>::Allocate(64));
  DeviceBuffer<int32_t> tokens;
  GRADSYNC_ASSIGN_OR_FAIL(tokens, DeviceBuffer<int32_t>::FromHost(std::vector<int32_t>(8, 0)));
  const absl::Status status =
      EncoderBackward<T>(buf.data(), nullptr, buf.data(), tokens.data(), 2, 4, 8, 8, scratch.data(), 16, this->stream_);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("scratch_bytes"), std::string::npos) << status;
}

}  // namespace
}  // namespace gradsync::kernels::cuda
