// DevicePages (gradsync/kernels/cuda/device_pages.h) on a GPU (skipped without one): a released
// range reads zero and its whole chunks go back to the device, measurably (cudaMemGetInfo); its
// neighbours keep their values; a commit maps chunks back zeroed and leaves mapped ones alone; the
// peak counts what was mapped at once.
#include "gradsync/kernels/cuda/device_pages.h"

#include <cstdint>
#include <numeric>
#include <vector>

#include "test_util.h"

namespace gradsync::kernels::cuda::testing {
namespace {

class DevicePagesTest : public CudaTest {
 protected:
  // Elements [begin, end) of `pages`, which must be mapped.
  std::vector<float> Read(const DevicePages& pages, int64_t begin, int64_t end) {
    std::vector<float> host(static_cast<size_t>(end - begin));
    EXPECT_TRUE(Sync());
    EXPECT_EQ(cudaMemcpy(host.data(), pages.data() + begin, host.size() * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
  // 0, 1, 2, ... + offset over the whole array.
  void Fill(DevicePages& pages, float offset) {
    std::vector<float> host(static_cast<size_t>(pages.size()));
    std::iota(host.begin(), host.end(), offset);
    ASSERT_EQ(cudaMemcpy(pages.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  static std::vector<float> Iota(int64_t begin, int64_t end, float offset) {
    std::vector<float> v(static_cast<size_t>(end - begin));
    std::iota(v.begin(), v.end(), static_cast<float>(begin) + offset);
    return v;
  }
};

TEST_F(DevicePagesTest, StartsMappedAndZeroedInAtMostTheChunkBound) {
  auto pages = DevicePages::Create(0, 3'000'001, stream_);
  ASSERT_TRUE(pages.ok()) << pages.status();
  const DevicePages& p = **pages;
  EXPECT_EQ(p.size(), 3'000'001);
  EXPECT_GE(p.mapped_bytes(), p.size() * 4);
  EXPECT_LT(p.mapped_bytes(), p.size() * 4 + p.chunk_elements() * 4) << "one partial chunk at most";
  EXPECT_LE(p.mapped_bytes() / (p.chunk_elements() * 4), DevicePages::kMaxChunks);
  for (float x : Read(p, 0, p.size())) ASSERT_EQ(x, 0.0f);
}

TEST_F(DevicePagesTest, AReleasedRangeReadsZeroAndOnlyItsWholeChunksGoBack) {
  auto pages = DevicePages::Create(0, 10'000'000, stream_);
  ASSERT_TRUE(pages.ok()) << pages.status();
  DevicePages& p = **pages;
  if (!p.vmm()) GTEST_SKIP() << "this GPU has no virtual memory management: nothing goes back";
  Fill(p, 1.0f);
  const int64_t per = p.chunk_elements(), mapped = p.mapped_bytes();
  // From inside chunk 1 to inside chunk 4: chunks 2 and 3 are whole.
  const int64_t begin = per + per / 3, end = 4 * per + per / 2;
  ASSERT_LT(end, p.size());
  ASSERT_TRUE(p.Release(begin, end).ok());
  EXPECT_EQ(p.mapped_bytes(), mapped - 2 * per * 4);
  // The mapped parts: neighbours keep their values, the range's edges read zero.
  EXPECT_EQ(Read(p, 0, begin), Iota(0, begin, 1.0f));
  EXPECT_EQ(Read(p, end, p.size()), Iota(end, p.size(), 1.0f));
  for (float x : Read(p, begin, 2 * per)) ASSERT_EQ(x, 0.0f);
  for (float x : Read(p, 4 * per, end)) ASSERT_EQ(x, 0.0f);

  // Committing the range maps the two chunks back, zeroed, and leaves the mapped ones alone.
  ASSERT_TRUE(p.Commit(begin - 5, end + 5).ok());
  EXPECT_EQ(p.mapped_bytes(), mapped);
  for (float x : Read(p, begin, end)) ASSERT_EQ(x, 0.0f);
  EXPECT_EQ(Read(p, end, end + 5), Iota(end, end + 5, 1.0f));
  EXPECT_EQ(Read(p, begin - 5, begin), Iota(begin - 5, begin, 1.0f));
}

TEST_F(DevicePagesTest, ARangeWithinOneChunkIsZeroedAndTheEndTakesTheLastChunk) {
  auto pages = DevicePages::Create(0, 5'000'000, stream_);
  ASSERT_TRUE(pages.ok()) << pages.status();
  DevicePages& p = **pages;
  if (!p.vmm()) GTEST_SKIP() << "this GPU has no virtual memory management: nothing goes back";
  Fill(p, 1.0f);
  const int64_t mapped = p.mapped_bytes();
  ASSERT_TRUE(p.Release(10, 20).ok());
  EXPECT_EQ(p.mapped_bytes(), mapped);
  for (float x : Read(p, 10, 20)) ASSERT_EQ(x, 0.0f);
  EXPECT_EQ(Read(p, 20, 30), Iota(20, 30, 1.0f));
  // To the end: the last chunk, partial as it is, goes too.
  const int64_t per = p.chunk_elements();
  const int64_t last_chunk = (p.size() - 1) / per * per;
  ASSERT_TRUE(p.Release(last_chunk, p.size()).ok());
  EXPECT_EQ(p.mapped_bytes(), mapped - per * 4);
  // Everything, then one element back: one chunk mapped, zero.
  ASSERT_TRUE(p.Release(0, p.size()).ok());
  EXPECT_EQ(p.mapped_bytes(), 0);
  ASSERT_TRUE(p.Commit(per + 7, per + 8).ok());
  EXPECT_EQ(p.mapped_bytes(), per * 4);
  for (float x : Read(p, per, 2 * per)) ASSERT_EQ(x, 0.0f);
  // Zero skips what is unmapped.
  ASSERT_TRUE(p.Zero(0, p.size()).ok());
  EXPECT_TRUE(Sync());
}

TEST_F(DevicePagesTest, ReleasedMemoryGoesBackToTheDeviceAndThePeakRemembersIt) {
  const int64_t count = 64 << 20;  // 256 MiB
  auto pages = DevicePages::Create(0, count, stream_);
  ASSERT_TRUE(pages.ok()) << pages.status();
  DevicePages& p = **pages;
  if (!p.vmm()) GTEST_SKIP() << "this GPU has no virtual memory management: nothing goes back";
  ASSERT_TRUE(Sync());
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  ASSERT_TRUE(p.Release(0, count).ok());
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  EXPECT_GE(static_cast<int64_t>(free_after) - static_cast<int64_t>(free_before), count * 4 - (8 << 20))
      << "the device did not get the released memory back";
  EXPECT_EQ(p.peak_mapped_bytes(),
            (count * 4 + p.chunk_elements() * 4 - 1) / (p.chunk_elements() * 4) * (p.chunk_elements() * 4));
  p.ResetPeak();
  EXPECT_EQ(p.peak_mapped_bytes(), 0);
  ASSERT_TRUE(p.Commit(0, p.chunk_elements()).ok());
  EXPECT_EQ(p.peak_mapped_bytes(), p.chunk_elements() * 4);
}

}  // namespace
}  // namespace gradsync::kernels::cuda::testing
