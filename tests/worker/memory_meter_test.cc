// train::MemoryMeter and the process's peak RSS, on this process: the peak follows memory actually
// touched, the reset brings it back down, and a sample carries the replica's footprint.
#include "gradsync/train/memory_meter.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

constexpr int64_t kBlock = 256 << 20;

// Touches kBlock bytes, so they become resident, then frees them.
void TouchAndFree() {
  auto block = std::make_unique<char[]>(kBlock);
  std::memset(block.get(), 1, kBlock);
  volatile char sink = block[kBlock - 1];
  (void)sink;
}

TEST(MemoryMeterTest, ThePeakRssCoversMemoryTouchedAndTheResetForgetsIt) {
  ASSERT_GT(train::PeakRssBytes(), 0) << "VmHWM of /proc/self/status";
  if (!train::ResetPeakRss()) GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs";
  const int64_t before = train::PeakRssBytes();
  TouchAndFree();
  const int64_t touched = train::PeakRssBytes();
  EXPECT_GE(touched, before + kBlock * 9 / 10) << "before " << before;
  ASSERT_TRUE(train::ResetPeakRss());
  EXPECT_LT(train::PeakRssBytes(), touched - kBlock / 2) << "the freed block no longer counts after the reset";
}

TEST(MemoryMeterTest, ASampleCarriesTheFootprintAndThePeak) {
  train::MemoryMeter meter;
  meter.Start(/*on_gpu=*/false);
  const v1::RankMemory m = meter.Sample(3, train::MemoryFootprint{.params = 40, .grads = 40, .optimizer = 24});
  EXPECT_EQ(m.rank(), 3);
  EXPECT_EQ(m.param_bytes(), 40);
  EXPECT_EQ(m.grad_bytes(), 40);
  EXPECT_EQ(m.optimizer_bytes(), 24);
  EXPECT_GT(m.peak_rss_bytes(), 0);
  EXPECT_EQ(m.peak_device_bytes(), 0) << "a CPU rank asks no device";
}

}  // namespace
}  // namespace gradsync::worker
