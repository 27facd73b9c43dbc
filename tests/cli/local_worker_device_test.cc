// The --device each worker of a local cluster gets: one GPU per worker as far as they go; text
// that names no device is refused where the option is read.
#include "gradsync/cluster/local_cluster.h"

#include "gtest/gtest.h"

namespace gradsync::cluster {
namespace {

// The option as `gradsync run` and `local up` read it, then worker `index`'s device.
absl::StatusOr<std::string> LocalWorkerDevice(const std::string& option, int index, int gpus) {
  absl::StatusOr<device::DeviceRequest> request = device::ParseDeviceRequest(option, "--device");
  if (!request.ok()) return request.status();
  absl::StatusOr<device::DeviceRequest> d = cluster::LocalWorkerDevice(*request, index, gpus);
  if (!d.ok()) return d.status();
  return d->ToString();
}

std::string Device(const std::string& device, int index, int gpus) {
  absl::StatusOr<std::string> d = LocalWorkerDevice(device, index, gpus);
  return d.ok() ? *d : std::string(d.status().message());
}

TEST(LocalWorkerDevice, AutoSpreadsWorkersOverTheGpusOrStaysOnTheCpu) {
  EXPECT_EQ(Device("auto", 0, 4), "cuda:0");
  EXPECT_EQ(Device("auto", 3, 4), "cuda:3");
  EXPECT_EQ(Device("auto", 5, 4), "cuda:1") << "more workers than GPUs share them round robin";
  EXPECT_EQ(Device("auto", 1, 1), "cuda:0");
  EXPECT_EQ(Device("auto", 2, 0), "cpu");
}

TEST(LocalWorkerDevice, ExplicitDevicesPassThrough) {
  EXPECT_EQ(Device("cuda", 2, 2), "cuda:0");
  EXPECT_EQ(Device("cpu", 1, 8), "cpu");
  EXPECT_EQ(Device("cuda:1", 0, 8), "cuda:1");
}

TEST(LocalWorkerDevice, AGpuThisMachineLacksIsRefusedBeforeAnyWorkerStarts) {
  absl::StatusOr<std::string> none = LocalWorkerDevice("cuda", 0, 0);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("--device cuda: 0 GPUs are visible on this machine"), std::string::npos)
      << none.status();
  absl::StatusOr<std::string> third = LocalWorkerDevice("cuda:2", 0, 2);
  EXPECT_NE(third.status().message().find("--device cuda:2: 2 GPUs are visible"), std::string::npos) << third.status();
  absl::StatusOr<std::string> typo = LocalWorkerDevice("gpu", 0, 2);
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(typo.status().message().find("--device: expected auto, cpu, cuda or cuda:N, got \"gpu\""),
            std::string::npos);
}

}  // namespace
}  // namespace gradsync::cluster
