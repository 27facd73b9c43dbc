#include "gradsync/device/gpu_peak.h"

#include "gtest/gtest.h"

namespace gradsync::device {
namespace {

TEST(GpuPeak, NamesAsCudaReportsThemFindTheirDenseBf16Peak) {
  EXPECT_DOUBLE_EQ(DenseBf16PeakFlops("NVIDIA H100 80GB HBM3"), 989.4e12);
  // A variant is not taken for its family's flagship.
  EXPECT_DOUBLE_EQ(DenseBf16PeakFlops("NVIDIA H100 PCIe"), 756.0e12);
  EXPECT_DOUBLE_EQ(DenseBf16PeakFlops("NVIDIA H200"), 989.4e12);
  EXPECT_DOUBLE_EQ(DenseBf16PeakFlops("NVIDIA A100-SXM4-80GB"), 312.0e12);
  EXPECT_DOUBLE_EQ(DenseBf16PeakFlops("NVIDIA L40S"), 362.05e12);
}

TEST(GpuPeak, UnknownDevicesHaveNoPeak) {
  EXPECT_EQ(DenseBf16PeakFlops("cpu (16 cores)"), 0);
  EXPECT_EQ(DenseBf16PeakFlops("Tesla T4"), 0);
  EXPECT_EQ(DenseBf16PeakFlops(""), 0);
}

}  // namespace
}  // namespace gradsync::device
