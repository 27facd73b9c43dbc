// GPU health through NVML: the reader against a stand-in for the driver's library (fake_nvml.cc;
// this host has no driver), the worker's /metrics series built from it, and, where a GPU is
// visible, the real libnvidia-ml.so.1 reading it.
#include "gpu_metrics.h"

#include "gradsync/device/device.h"
#include "gradsync/device/gpu_health.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace gradsync::worker {
namespace {

using device::GpuHealthReader;

const std::string kFullGpu = "GPU-00000000-0000-0000-0000-00000000000a";
const std::string kSparseGpu = "GPU-00000000-0000-0000-0000-00000000000b";
const std::string kLostGpu = "GPU-00000000-0000-0000-0000-00000000000c";

std::unique_ptr<GpuHealthReader> OpenFake() {
  auto reader = GpuHealthReader::Open(GRADSYNC_FAKE_NVML);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? *std::move(reader) : nullptr;
}

TEST(GpuHealthReader, ReadsEveryQuantityOfAGpuByItsUuid) {
  auto reader = OpenFake();
  ASSERT_NE(reader, nullptr);
  absl::StatusOr<device::GpuHealth> h = reader->Read(kFullGpu);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->uuid, kFullGpu);
  EXPECT_EQ(h->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h->utilization, 0.87);
  EXPECT_EQ(h->memory_used_bytes, 12.0 * (1ull << 30));
  EXPECT_EQ(h->memory_total_bytes, 80.0 * (1ull << 30));
  EXPECT_EQ(h->temperature_celsius, 61.0);
  EXPECT_EQ(h->power_watts, 312.5) << "NVML reports milliwatts";
  EXPECT_EQ(h->ecc_corrected_errors, 4.0);
  EXPECT_EQ(h->ecc_uncorrected_errors, 0.0);
}

TEST(GpuHealthReader, LeavesOutWhatAGpuDoesNotReport) {
  auto reader = OpenFake();
  ASSERT_NE(reader, nullptr);
  absl::StatusOr<device::GpuHealth> h = reader->Read(kSparseGpu);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->temperature_celsius, 35.0);
  EXPECT_FALSE(h->power_watts.has_value());
  EXPECT_FALSE(h->ecc_corrected_errors.has_value());
  EXPECT_FALSE(h->ecc_uncorrected_errors.has_value());
}

TEST(GpuHealthReader, AnUnknownGpuIsNotFoundAndALostOneUnavailable) {
  auto reader = OpenFake();
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->Read("GPU-ffffffff-0000-0000-0000-000000000000").status().code(), absl::StatusCode::kNotFound);
  const absl::Status lost = reader->Read(kLostGpu).status();
  EXPECT_EQ(lost.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(lost.message().find("GPU is lost"), std::string::npos) << lost;
}

TEST(GpuHealthReader, ALibraryThatIsMissingOrIsNotNvmlIsUnavailableAndNamed) {
  const auto missing = GpuHealthReader::Open("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(missing.status().message().find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << missing.status();
  const auto not_nvml = GpuHealthReader::Open("libm.so.6");
  EXPECT_EQ(not_nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(not_nvml.status().message().find("nvmlInit_v2"), std::string::npos) << not_nvml.status();
}

TEST(GpuMetrics, ExposesEachGpusHealthAndMarksALostOneDown) {
  GpuMetrics metrics(OpenFake(), {kFullGpu, kSparseGpu, kLostGpu});
  const std::string text = prometheus::TextSerializer().Serialize(metrics.Collect());
  const std::string full = "gpu_uuid=\"" + kFullGpu + "\",gpu_model=\"NVIDIA H100 80GB HBM3\"";
  for (const std::string& line :
       {"gradsync_gpu_up{" + full + "} 1", "gradsync_gpu_utilization_ratio{" + full + "} 0.87",
        "gradsync_gpu_temperature_celsius{" + full + "} 61", "gradsync_gpu_power_watts{" + full + "} 312.5",
        "gradsync_gpu_ecc_errors_total{" + full + ",type=\"corrected\"} 4",
        "gradsync_gpu_ecc_errors_total{" + full + ",type=\"uncorrected\"} 0",
        "gradsync_gpu_up{gpu_uuid=\"" + kLostGpu + "\",gpu_model=\"\"} 0",
        std::string("# TYPE gradsync_gpu_ecc_errors_total counter")}) {
    EXPECT_NE(text.find(line), std::string::npos) << "no `" << line << "` in\n" << text;
  }
  EXPECT_EQ(text.find("gradsync_gpu_power_watts{gpu_uuid=\"" + kSparseGpu), std::string::npos)
      << "a quantity the GPU does not report is left out, not zero";
}

TEST(GpuMetrics, OnlyAGpuWorkerWithNvmlServesThem) {
  v1::Device cpu;
  cpu.set_kind(v1::Device::CPU);
  EXPECT_EQ(GpuMetricsFor(cpu, GRADSYNC_FAKE_NVML), nullptr);
  v1::Device gpu;
  gpu.set_kind(v1::Device::CUDA);
  gpu.set_gpu_uuid(kFullGpu);
  EXPECT_EQ(GpuMetricsFor(gpu, "/nonexistent/libnvidia-ml.so.1"), nullptr) << "no driver: trains on without them";
  std::shared_ptr<prometheus::Collectable> metrics = GpuMetricsFor(gpu, GRADSYNC_FAKE_NVML);
  ASSERT_NE(metrics, nullptr);
  EXPECT_NE(prometheus::TextSerializer().Serialize(metrics->Collect()).find(kFullGpu), std::string::npos);
}

// The driver's own library, on a host with a GPU.
TEST(GpuHealthReader, TheDriversNvmlReadsTheVisibleGpus) {
  const std::vector<device::GpuInfo> gpus = device::ListGpus();
  if (gpus.empty()) GTEST_SKIP() << "no CUDA device visible: the driver's NVML is not exercised";
  auto reader = GpuHealthReader::Open();
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (const device::GpuInfo& gpu : gpus) {
    absl::StatusOr<device::GpuHealth> h = (*reader)->Read(gpu.uuid);
    ASSERT_TRUE(h.ok()) << gpu.uuid << ": " << h.status();
    EXPECT_FALSE(h->name.empty());
    ASSERT_TRUE(h->memory_total_bytes.has_value());
    EXPECT_NEAR(*h->memory_total_bytes, static_cast<double>(gpu.memory_bytes), 0.05 * gpu.memory_bytes)
        << "NVML and CUDA see the same memory";
    ASSERT_TRUE(h->utilization.has_value());
    EXPECT_GE(*h->utilization, 0.0);
    EXPECT_LE(*h->utilization, 1.0);
  }
}

}  // namespace
}  // namespace gradsync::worker
