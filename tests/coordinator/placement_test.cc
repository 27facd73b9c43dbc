// spec::PlaceRanks: the spec's device, precision and backend choices against the gang's devices; and
// the coordinator putting the result in every assignment, or failing a job no gang can run.
#include "gradsync/spec/placement.h"

#include "absl/strings/str_cat.h"
#include "coordinator.h"
#include "coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

using ::testing::HasSubstr;

spec::RankHost Cpu(const std::string& host) {
  spec::RankHost r{"w-" + host, host, {}};
  r.device.set_kind(v1::Device::CPU);
  return r;
}

spec::RankHost Gpu(const std::string& host, int index) {
  spec::RankHost r{absl::StrCat("w-", host, "-", index), host, {}};
  r.device.set_kind(v1::Device::CUDA);
  r.device.set_gpu_index(index);
  return r;
}

v1::JobSpec Spec(const std::string& preset, const std::string& device, const std::string& backend,
                 const std::string& precision = "auto") {
  v1::JobSpec s;
  s.mutable_model()->set_preset(preset);
  s.mutable_model()->set_device(device);
  s.mutable_model()->set_precision(precision);
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

struct Placed {
  std::vector<std::string> devices, precisions;
  std::string backend;
};

Placed Place(const v1::JobSpec& spec, const std::vector<spec::RankHost>& ranks) {
  absl::StatusOr<std::vector<v1::Placement>> p = spec::PlaceRanks(spec, ModelOf(spec), ranks);
  EXPECT_TRUE(p.ok()) << p.status();
  Placed out;
  if (!p.ok()) return out;
  for (const v1::Placement& r : *p) {
    out.devices.push_back(r.device());
    out.precisions.push_back(r.precision());
    EXPECT_EQ(r.backend(), (*p)[0].backend()) << "every rank of a generation uses one backend";
  }
  out.backend = p->empty() ? "" : (*p)[0].backend();
  return out;
}

using V = std::vector<std::string>;

TEST(PlaceRanks, AutoTakesNcclWhenEveryRankHasAGpuOfItsOwn) {
  const Placed p = Place(Spec("gpt-tiny", "auto", "auto"), {Gpu("a", 0), Gpu("a", 1), Gpu("b", 0)});
  EXPECT_EQ(p.devices, (V{"cuda", "cuda", "cuda"}));
  EXPECT_EQ(p.precisions, (V{"bf16", "bf16", "bf16"}));
  EXPECT_EQ(p.backend, "nccl");
  EXPECT_EQ(Place(Spec("gpt-tiny", "cuda", "auto"), {Gpu("a", 0)}).backend, "nccl") << "one rank, one GPU";
}

TEST(PlaceRanks, AutoTakesGlooWhenRanksShareAGpuAndTheCpuWhenOneHasNone) {
  const Placed shared = Place(Spec("gpt-tiny", "auto", "auto"), {Gpu("a", 0), Gpu("a", 0)});
  EXPECT_EQ(shared.devices, (V{"cuda", "cuda"}));
  EXPECT_EQ(shared.backend, "gloo");
  // Never a mix: one worker without a GPU puts every rank on its CPU.
  const Placed mixed = Place(Spec("gpt-tiny", "auto", "auto"), {Gpu("a", 0), Cpu("b")});
  EXPECT_EQ(mixed.devices, (V{"cpu", "cpu"}));
  EXPECT_EQ(mixed.precisions, (V{"fp32", "fp32"}));
  EXPECT_EQ(mixed.backend, "gloo");
  const Placed cpus = Place(Spec("gpt-tiny", "auto", "auto"), {Cpu("a"), Cpu("b")});
  EXPECT_EQ(cpus.devices, (V{"cpu", "cpu"}));
  EXPECT_EQ(cpus.backend, "gloo");
}

TEST(PlaceRanks, TheMlpAndDeviceCpuStayOnTheCpuOfGpuWorkers) {
  const Placed mlp = Place(Spec("mlp", "auto", "auto"), {Gpu("a", 0), Gpu("a", 1)});
  EXPECT_EQ(mlp.devices, (V{"cpu", "cpu"}));
  EXPECT_EQ(mlp.precisions, (V{"fp32", "fp32"}));
  EXPECT_EQ(mlp.backend, "gloo");
  const Placed cpu = Place(Spec("gpt-tiny", "cpu", "auto"), {Gpu("a", 0)});
  EXPECT_EQ(cpu.devices, (V{"cpu"}));
  EXPECT_EQ(cpu.backend, "gloo");
}

TEST(PlaceRanks, ExplicitChoicesAreKept) {
  const Placed p = Place(Spec("gpt-tiny", "cuda", "gloo", "fp32"), {Gpu("a", 0), Gpu("a", 1)});
  EXPECT_EQ(p.devices, (V{"cuda", "cuda"}));
  EXPECT_EQ(p.precisions, (V{"fp32", "fp32"}));
  EXPECT_EQ(p.backend, "gloo") << "gloo asked for by name, though NCCL could run";
}

TEST(PlaceRanks, ImpossibleChoicesNameTheFieldAndTheWorker) {
  absl::StatusOr<std::vector<v1::Placement>> no_gpu = spec::PlaceRanks(
      Spec("gpt-tiny", "cuda", "auto"), ModelOf(Spec("gpt-tiny", "cuda", "auto")), {Gpu("a", 0), Cpu("b")});
  EXPECT_EQ(no_gpu.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      no_gpu.status().message(),
      HasSubstr("model.device: \"cuda\" needs a GPU on every worker; rank 1 (w-b on b) registered without one"));

  absl::StatusOr<std::vector<v1::Placement>> shared = spec::PlaceRanks(
      Spec("gpt-tiny", "auto", "nccl"), ModelOf(Spec("gpt-tiny", "auto", "nccl")), {Gpu("a", 1), Gpu("a", 1)});
  EXPECT_EQ(shared.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(shared.status().message(),
              HasSubstr("ddp.backend: \"nccl\" needs every rank on a GPU of its own, and rank 1"));
  EXPECT_THAT(shared.status().message(), HasSubstr("shares GPU 1 with another rank"));

  absl::StatusOr<std::vector<v1::Placement>> cpu_rank = spec::PlaceRanks(
      Spec("gpt-tiny", "auto", "nccl"), ModelOf(Spec("gpt-tiny", "auto", "nccl")), {Gpu("a", 0), Cpu("b")});
  EXPECT_THAT(cpu_rank.status().message(), HasSubstr("rank 0 (w-a-0 on a) computes on its CPU"))
      << "with one worker without a GPU every rank computes on its CPU";

  absl::StatusOr<std::vector<v1::Placement>> bf16 = spec::PlaceRanks(
      Spec("gpt-tiny", "auto", "gloo", "bf16"), ModelOf(Spec("gpt-tiny", "auto", "gloo", "bf16")), {Cpu("a")});
  EXPECT_THAT(bf16.status().message(), HasSubstr("model.precision: bf16 runs on a GPU only, and rank 0 (w-a on a)"));
}

TEST(PlaceRanks, TheSameGpuIndexOnTwoHostsIsTwoGpus) {
  EXPECT_EQ(Place(Spec("gpt-tiny", "auto", "nccl"), {Gpu("a", 0), Gpu("b", 0)}).backend, "nccl");
}

class PlacementSchedulingTest : public ::testing::Test {
 protected:
  PlacementSchedulingTest() {
    CoordinatorOptions options;
    options.artifact_root = "/tmp/gradsync-test-artifacts";
    options.clock = [] { return absl::FromUnixSeconds(1'700'000'000); };
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
  }

  std::string RegisterGpu(const std::string& host, int index) {
    v1::RegisterWorkerRequest req;
    req.set_hostname(host);
    req.mutable_device()->set_kind(v1::Device::CUDA);
    req.mutable_device()->set_gpu_index(index);
    return c_->RegisterWorker(req).worker_id();
  }

  v1::Job Submit(const std::string& device, const std::string& backend, int world_size) {
    v1::JobSpec spec;
    spec.set_name("gpu");
    spec.mutable_model()->set_preset("gpt-tiny");
    spec.mutable_model()->set_device(device);
    spec.mutable_data()->mutable_text()->add_paths("corpus.txt");
    spec.mutable_training()->set_world_size(world_size);
    spec.mutable_training()->set_max_steps(10);
    spec.mutable_ddp()->set_backend(backend);
    auto job = c_->CreateJob(spec);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : v1::Job();
  }

  std::unique_ptr<Coordinator> c_;
};

TEST_F(PlacementSchedulingTest, EveryAssignmentCarriesItsPlacement) {
  const std::string w0 = RegisterGpu("h", 0), w1 = RegisterGpu("h", 1);
  const v1::Job job = Submit("auto", "auto", 2);
  for (const std::string& w : {w0, w1}) {
    const v1::Assignment a = TakeTestAssignment(*c_, w);
    EXPECT_EQ(a.placement().device(), "cuda");
    EXPECT_EQ(a.placement().backend(), "nccl");
    EXPECT_EQ(a.placement().precision(), "bf16");
  }
  const v1::Job running = *c_->GetJob(job.id());
  bool scheduled = false;
  for (const v1::JobEvent& e : running.events()) {
    if (e.type() != "Scheduled") continue;
    scheduled = true;
    EXPECT_THAT(e.message(), HasSubstr("2 ranks over nccl: rank 0 on " + w0 + " (h, cuda:0 bf16)"));
  }
  EXPECT_TRUE(scheduled);
}

TEST_F(PlacementSchedulingTest, AJobTheGangCannotRunFailsAndLeavesTheWorkersForOthers) {
  const std::string cpu = RegisterTestWorker(*c_, "h0");
  const v1::Job gpu_job = Submit("cuda", "auto", 1);
  const v1::Job failed = *c_->GetJob(gpu_job.id());
  EXPECT_EQ(failed.state(), v1::FAILED);
  EXPECT_THAT(failed.state_reason(), HasSubstr("model.device: \"cuda\" needs a GPU on every worker; rank 0 (" + cpu));
  ASSERT_FALSE(failed.events().empty());
  EXPECT_EQ(failed.events(failed.events_size() - 1).type(), "PlacementFailed");

  const v1::Job cpu_job = Submit("cpu", "auto", 1);
  EXPECT_EQ(c_->GetJob(cpu_job.id())->state(), v1::RUNNING) << "the worker stayed idle for the next job";
  EXPECT_EQ(TakeTestAssignment(*c_, cpu).placement().device(), "cpu");
}

}  // namespace
}  // namespace gradsync::coordinator
