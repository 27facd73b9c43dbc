// --device as the worker and the CLI read it: parsed once into a typed request, refused naming
// the field and the text, resolved against this host's GPUs.
#include "gradsync/device/device_request.h"

#include "gradsync/device/device.h"
#include "gtest/gtest.h"

namespace gradsync::device {
namespace {

TEST(DeviceRequest, EveryFormReadsBackAsWritten) {
  for (const std::string text : {"auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:12"}) {
    absl::StatusOr<DeviceRequest> r = ParseDeviceRequest(text, "--device");
    ASSERT_TRUE(r.ok()) << text << ": " << r.status();
    EXPECT_EQ(r->ToString(), text);
  }
  EXPECT_EQ(*ParseDeviceRequest("auto", "--device"), DeviceRequest{});
  EXPECT_EQ(*ParseDeviceRequest("cpu", "--device"), DeviceRequest::Cpu());
  EXPECT_EQ(*ParseDeviceRequest("cuda", "--device"), DeviceRequest::Gpu(-1));
  EXPECT_EQ(*ParseDeviceRequest("cuda:3", "--device"), DeviceRequest::Gpu(3));
}

TEST(DeviceRequest, OtherTextIsRefusedNamingTheFieldAndTheText) {
  for (const std::string text : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "cuda:01", "cuda:+1", "cuda:0 "}) {
    absl::StatusOr<DeviceRequest> r = ParseDeviceRequest(text, "--device");
    ASSERT_FALSE(r.ok()) << "\"" << text << "\" was read as " << r->ToString();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "--device: expected auto, cpu, cuda or cuda:N, got \"" + text + "\"");
  }
  EXPECT_EQ(ParseDeviceRequest("tpu", "GRADSYNC_DEVICE").status().message(),
            "GRADSYNC_DEVICE: expected auto, cpu, cuda or cuda:N, got \"tpu\"");
}

TEST(DeviceRequest, ResolvesToTheCpuOrAGpuThisHostHas) {
  absl::StatusOr<v1::Device> cpu = ResolveDevice(DeviceRequest::Cpu());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->kind(), v1::Device::CPU);
  const int gpus = static_cast<int>(ListGpus().size());
  absl::StatusOr<v1::Device> beyond = ResolveDevice(DeviceRequest::Gpu(gpus));
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(beyond.status().message().find("device: cuda:" + std::to_string(gpus) + " asked for, but " +
                                           std::to_string(gpus) + " GPUs are visible"),
            std::string::npos)
      << beyond.status();
  absl::StatusOr<v1::Device> automatic = ResolveDevice(DeviceRequest{});
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_EQ(automatic->kind(), gpus > 0 ? v1::Device::CUDA : v1::Device::CPU);
}

}  // namespace
}  // namespace gradsync::device
