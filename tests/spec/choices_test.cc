// The spec's choices as enums: every name reads back as its value, an unknown text is refused in
// ValidateJobSpec's words, and a placement refuses anything the coordinator leaves unresolved.
#include "gradsync/spec/choices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::HasSubstr;

TEST(ChoicesTest, EveryNameParsesBackToItsValue) {
  for (Device d : {Device::kAuto, Device::kCpu, Device::kCuda}) EXPECT_EQ(*ParseDevice(Name(d)), d);
  for (Precision p : {Precision::kAuto, Precision::kFp32, Precision::kBf16}) EXPECT_EQ(*ParsePrecision(Name(p)), p);
  for (LastBatch l : {LastBatch::kPartial, LastBatch::kDrop, LastBatch::kPad}) EXPECT_EQ(*ParseLastBatch(Name(l)), l);
  for (LrSchedule l : {LrSchedule::kCosine, LrSchedule::kConstant}) EXPECT_EQ(*ParseLrSchedule(Name(l)), l);
  for (Backend b : {Backend::kAuto, Backend::kGloo, Backend::kNccl}) EXPECT_EQ(*ParseBackend(Name(b)), b);
  for (GradCompression g : {GradCompression::kNone, GradCompression::kBf16}) {
    EXPECT_EQ(*ParseGradCompression(Name(g)), g);
  }
  for (Transport t : {Transport::kAuto, Transport::kTcp}) EXPECT_EQ(*ParseTransport(Name(t)), t);
  EXPECT_EQ(Name(Precision::kBf16), "bf16");
  EXPECT_EQ(Name(LastBatch::kPad), "pad");
}

TEST(ChoicesTest, AnUnknownTextNamesTheFieldAndTheChoices) {
  const absl::StatusOr<Backend> mpi = ParseBackend("mpi");
  EXPECT_EQ(mpi.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mpi.status().message(), "ddp.backend: must be one of auto, gloo, nccl, got \"mpi\"");
  EXPECT_EQ(ParseLastBatch("keep").status().message(),
            "data.lastBatch: must be one of partial, drop, pad, got \"keep\"");
  EXPECT_EQ(ParseDevice("", "bench --device").status().message(),
            "bench --device: must be one of auto, cpu, cuda, got \"\"");
}

TEST(ChoicesTest, APlacementHoldsNoAutoAndAnEmptyOneMeansTheCpuAndGloo) {
  v1::Placement gpu;
  gpu.set_device("cuda");
  gpu.set_backend("nccl");
  gpu.set_precision("bf16");
  const absl::StatusOr<Placement> p = ParsePlacement(gpu);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->device, Device::kCuda);
  EXPECT_EQ(p->backend, Backend::kNccl);
  EXPECT_EQ(p->precision, Precision::kBf16);

  const absl::StatusOr<Placement> legacy = ParsePlacement(v1::Placement());
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->device, Device::kCpu);
  EXPECT_EQ(legacy->backend, Backend::kGloo);
  EXPECT_EQ(legacy->precision, Precision::kFp32);

  v1::Placement unresolved = gpu;
  unresolved.set_backend("auto");
  EXPECT_THAT(ParsePlacement(unresolved).status().message(),
              HasSubstr("placement.backend: must be one of gloo, nccl, got \"auto\""));
}

}  // namespace
}  // namespace gradsync::spec
