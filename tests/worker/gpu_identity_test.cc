// What a worker registers about its GPU, and the placement the coordinator derives from it: GPUs
// are told apart by UUID, not by (host name, CUDA ordinal), which CUDA_VISIBLE_DEVICES renumbers
// and containers repeat. The identities are fabricated (no GPU is needed): each case is a layout
// a real cluster produces.
#include "gradsync/device/gpu_identity.h"

#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gradsync/spec/placement.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

constexpr char kUuidA[] = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
constexpr char kUuidB[] = "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff";

spec::RankHost Gpu(const std::string& host, int ordinal, const std::string& uuid) {
  spec::RankHost r{absl::StrCat("w-", host, "-", ordinal, "-", uuid.substr(4, 2)), host, {}};
  r.device.set_kind(v1::Device::CUDA);
  r.device.set_gpu_index(ordinal);
  r.device.set_gpu_uuid(uuid);
  return r;
}

v1::JobSpec Spec(const std::string& backend) {
  v1::JobSpec s;
  s.mutable_model()->set_preset("gpt-tiny");
  s.mutable_model()->set_device("cuda");
  s.mutable_model()->set_precision("auto");
  s.mutable_ddp()->set_backend(backend);
  return s;
}

// The model's plan, as the scheduler makes it from the stored spec (its defaults filled).
nn::ModelPlan ModelOf(v1::JobSpec spec) {
  spec::FillDefaults(&spec);
  absl::StatusOr<nn::ModelPlan> plan = spec::PlanModel(spec);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : nn::ModelPlan{};
}

// The backend "auto" resolves to for this gang.
std::string AutoBackend(const std::vector<spec::RankHost>& ranks) {
  absl::StatusOr<std::vector<v1::Placement>> p = spec::PlaceRanks(Spec("auto"), ModelOf(Spec("auto")), ranks);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() && !p->empty() ? (*p)[0].backend() : "";
}

TEST(GpuIdentity, FormatsTheUuidAsNvidiaSmiPrintsIt) {
  const std::array<unsigned char, device::kGpuUuidBytes> bytes = {0x0a, 0x1b, 0x2c, 0x3d, 0x00, 0x00, 0x11, 0x11,
                                                                  0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0x55};
  EXPECT_EQ(device::FormatGpuUuid(bytes), kUuidA);
  const std::array<unsigned char, device::kGpuUuidBytes> ff = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(device::FormatGpuUuid(ff), "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff");
}

// Two workers of one host, each pinned to its own GPU with CUDA_VISIBLE_DEVICES: both see it as
// cuda:0. They are two GPUs, so NCCL, not Gloo staged through host memory.
TEST(GpuIdentity, TwoPinnedWorkersOfOneHostBothAtOrdinalZeroAreTwoGpus) {
  const std::vector<spec::RankHost> ranks = {Gpu("node", 0, kUuidA), Gpu("node", 0, kUuidB)};
  EXPECT_FALSE(device::SameGpu("node", ranks[0].device, "node", ranks[1].device));
  EXPECT_EQ(AutoBackend(ranks), "nccl");
  EXPECT_TRUE(spec::PlaceRanks(Spec("nccl"), ModelOf(Spec("nccl")), ranks).ok());
}

// One GPU seen as cuda:0 by a pinned worker and as cuda:1 by one that sees the whole host, or by
// two containers with different host names: one GPU, which NCCL refuses.
TEST(GpuIdentity, TheSameUuidIsOneGpuWhateverTheOrdinalOrHostName) {
  for (const auto& ranks : {std::vector<spec::RankHost>{Gpu("node", 0, kUuidA), Gpu("node", 1, kUuidA)},
                            std::vector<spec::RankHost>{Gpu("pod-a", 0, kUuidA), Gpu("pod-b", 0, kUuidA)}}) {
    EXPECT_TRUE(device::SameGpu(ranks[0].hostname, ranks[0].device, ranks[1].hostname, ranks[1].device));
    EXPECT_EQ(AutoBackend(ranks), "gloo") << ranks[1].hostname;
    const absl::StatusOr<std::vector<v1::Placement>> nccl =
        spec::PlaceRanks(Spec("nccl"), ModelOf(Spec("nccl")), ranks);
    EXPECT_EQ(nccl.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(nccl.status().message(),
                HasSubstr(absl::StrCat("rank 1 (", ranks[1].worker_id, " on ", ranks[1].hostname, ") shares GPU ",
                                       ranks[1].device.gpu_index(), " with another rank")));
    EXPECT_THAT(nccl.status().message(), HasSubstr(kUuidA));
  }
}

// The same ordinal on two machines, and two machines whose containers are both named
// "localhost": different UUIDs, different GPUs.
TEST(GpuIdentity, TheSameOrdinalOnTwoHostsIsTwoGpusEvenWhenTheHostNamesCollide) {
  for (const auto& hosts : {std::pair<std::string, std::string>{"node-1", "node-2"}, {"localhost", "localhost"}}) {
    const std::vector<spec::RankHost> ranks = {Gpu(hosts.first, 0, kUuidA), Gpu(hosts.second, 0, kUuidB)};
    EXPECT_FALSE(device::SameGpu(hosts.first, ranks[0].device, hosts.second, ranks[1].device));
    EXPECT_EQ(AutoBackend(ranks), "nccl") << hosts.second;
  }
}

// A worker that registered no UUID (built before UUIDs were registered) is compared the old way.
TEST(GpuIdentity, WithoutAUuidHostAndOrdinalDecide) {
  v1::Device a, b;
  a.set_kind(v1::Device::CUDA);
  b.set_kind(v1::Device::CUDA);
  b.set_gpu_uuid(kUuidB);
  EXPECT_TRUE(device::SameGpu("node", a, "node", b));
  EXPECT_FALSE(device::SameGpu("node", a, "other", b));
  b.set_gpu_index(1);
  EXPECT_FALSE(device::SameGpu("node", a, "node", b));
  v1::Device cpu;
  cpu.set_kind(v1::Device::CPU);
  EXPECT_FALSE(device::SameGpu("node", cpu, "node", cpu)) << "CPU ranks never share a GPU";
}

}  // namespace
}  // namespace gradsync
