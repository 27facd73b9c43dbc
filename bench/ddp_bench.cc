// gradsync-bench ddp: a model's step time with gradient communication and without (every
// micro-step in no_sync mode), so the difference is the communication the overlap failed to
// hide. Also the reducer's own account: communication time and exposed time per step; and each
// rank's memory: its process's peak RSS and the bytes its replica holds for the model's state.
//
// Each rank runs what a worker runs: the coordinator's placement (spec::PlaceRanks) for --device and
// --backend, the worker's train::TrainConfig built from the assignment, its replica, and its training
// loop, stepped here. With one NCCL rank, the difference is the reducer's own overhead.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench_commands.h"
#include "gradsync/core/env.h"
#include "gradsync/device/device.h"
#include "gradsync/kernels/cpu/blas_threads.h"
#include "gradsync/spec/choices.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "gradsync/spec/placement.h"
#include "gradsync/train/replica.h"
#include "gradsync/train/train_loop.h"
#include "proc_stats.h"
#include "rank_env.h"

namespace gradsync::bench {
namespace {

constexpr int kWarmupSteps = 3;

// Per step, over the ranks: the mean step, communication and exposed time, and the samples and
// tokens of all ranks.
struct Figures {
  double step_seconds = 0;
  double comm_seconds = 0;
  double exposed_seconds = 0;
  double samples = 0;
  double tokens = 0;
};

// One rank's memory in bytes: its process's resident memory before the replica was built and at
// its peak (VmHWM, after every step ran), and what its replica holds (train::Replica::Memory).
struct RankMemory {
  double start_rss = 0;
  double peak_rss = 0;
  double params = 0;
  double grads = 0;
  double optimizer = 0;
};
constexpr int kMemoryFields = 5;

int Fail(const absl::Status& s, int code) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return code;
}

int LocalSteps(const BenchArgs& args) { return args.local_steps < 0 ? args.steps : args.local_steps; }

// The spec with --device and --backend as its model.device and ddp.backend, long enough for the
// warm-up and both measured runs, and without checkpoints.
absl::StatusOr<v1::JobSpec> BenchSpec(const BenchArgs& args) {
  auto spec = args.spec_path.empty() ? spec::ParseJobSpec("{}", "defaults", args.overrides)
                                     : spec::LoadJobSpecFile(args.spec_path, args.overrides);
  if (!spec.ok()) return spec.status();
  spec->mutable_model()->set_device(args.device);
  spec->mutable_ddp()->set_backend(args.backend);
  spec->mutable_training()->set_max_steps(kWarmupSteps + args.steps + LocalSteps(args));
  spec->mutable_training()->set_epochs(0);
  spec->mutable_checkpoint()->set_every_steps(0);
  spec->mutable_checkpoint()->set_every_seconds(0);
  return spec::Normalize(*std::move(spec));
}

// The ranks as a local cluster's workers register: on this host, rank r on GPU r mod (GPUs
// visible) when the model asks for a GPU, else on the CPU.
absl::StatusOr<std::vector<spec::RankHost>> BenchRanks(const v1::JobSpec& spec, int ranks) {
  const bool cuda = spec::ParseDevice(spec.model().device()).value_or(spec::Device::kCpu) == spec::Device::kCuda;
  const int gpus = static_cast<int>(device::ListGpus().size());
  std::vector<spec::RankHost> hosts;
  for (int r = 0; r < ranks; ++r) {
    auto d =
        device::ResolveDevice(cuda && gpus > 0 ? device::DeviceRequest::Gpu(r % gpus) : device::DeviceRequest::Cpu());
    if (!d.ok()) return d.status();
    hosts.push_back({absl::StrCat("bench-", r), HostName(), *d});
  }
  return hosts;
}

// This rank's assignment, placed as the coordinator would place the gang.
absl::StatusOr<v1::Assignment> BenchAssignment(const v1::JobSpec& spec, const BenchArgs& args,
                                               const std::vector<spec::RankHost>& hosts) {
  auto model = spec::PlanModel(spec);
  if (!model.ok()) return model.status();
  auto placement = spec::PlaceRanks(spec, *model, hosts);
  if (!placement.ok()) return placement.status();
  v1::Assignment a;
  a.set_job_id("bench");
  a.set_rank(args.rank);
  a.set_world_size(args.ranks);
  *a.mutable_spec() = spec;
  *a.mutable_placement() = (*placement)[args.rank];
  return a;
}

// Runs `steps` steps of `loop`, the step reports adding up in *sum; then agrees on the figures
// across ranks (a step is as slow as its slowest rank, so the mean over ranks is what it cost).
absl::StatusOr<Figures> Measure(train::TrainLoop& loop, train::GradSync sync, int steps, Figures* sum,
                                comm::Communicator& comm) {
  *sum = Figures();
  for (int s = 0; s < steps; ++s) {
    if (absl::Status st = loop.Step(sync); !st.ok()) return st;
  }
  std::vector<double> v = {sum->step_seconds, sum->comm_seconds, sum->exposed_seconds, sum->samples, sum->tokens};
  if (absl::Status st = comm.AllReduceSum(std::span<double>(v)); !st.ok()) return st;
  const double per_rank_step = static_cast<double>(comm.size()) * steps;
  return Figures{v[0] / per_rank_step, v[1] / per_rank_step, v[2] / per_rank_step, v[3] / steps, v[4] / steps};
}

// Every rank's memory, on every rank: each fills its own row of a sum.
absl::StatusOr<std::vector<RankMemory>> GatherMemory(train::Replica& replica, double start_rss,
                                                     comm::Communicator& comm) {
  auto proc = ReadProcStats(::getpid());
  if (!proc.ok()) return proc.status();
  const train::MemoryFootprint held = replica.Memory();
  std::vector<double> rows(static_cast<size_t>(kMemoryFields) * comm.size(), 0.0);
  const double mine[kMemoryFields] = {start_rss, static_cast<double>(proc->peak_rss_bytes),
                                      static_cast<double>(held.params), static_cast<double>(held.grads),
                                      static_cast<double>(held.optimizer)};
  std::copy_n(mine, kMemoryFields, rows.begin() + kMemoryFields * comm.rank());
  if (absl::Status s = comm.AllReduceSum(std::span<double>(rows)); !s.ok()) return s;
  std::vector<RankMemory> all;
  for (int r = 0; r < comm.size(); ++r) {
    const double* row = rows.data() + kMemoryFields * r;
    all.push_back({row[0], row[1], row[2], row[3], row[4]});
  }
  return all;
}

void PrintMemory(const std::vector<RankMemory>& ranks) {
  constexpr double kMiB = 1 << 20;
  std::printf("memory per rank (MiB)     peak RSS  RSS at start    params     grads  optimizer\n");
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankMemory& m = ranks[r];
    std::printf("rank %-20zu %9.1f %13.1f %9.1f %9.1f %10.1f\n", r, m.peak_rss / kMiB, m.start_rss / kMiB,
                m.params / kMiB, m.grads / kMiB, m.optimizer / kMiB);
  }
}

void Print(const train::TrainLoop& loop, train::Replica& replica, const train::TrainConfig& config, const Figures& with,
           const std::optional<Figures>& without) {
  std::printf("# gradsync-bench ddp: %s, %d ranks x micro-batch %d x %d micro-steps, %zu buckets, on %s\n",
              replica.model().Describe().c_str(), config.world_size, config.sampler.micro_batch,
              config.sampler.grad_accum_steps, loop.reducer().buckets().size(), replica.Describe().c_str());
  const auto line = [](const char* name, const Figures& f) {
    std::printf("%s  %8.2f ms  (%.0f samples/s, %.0f tokens/s)\n", name, f.step_seconds * 1e3,
                f.samples / f.step_seconds, f.tokens / f.step_seconds);
  };
  line("step with communication   ", with);
  if (without.has_value()) line("step without communication", *without);
  std::printf("communication per step      %8.2f ms  (sum over buckets)\n", with.comm_seconds * 1e3);
  std::printf("exposed per step            %8.2f ms  (%.1f%% of the step)\n", with.exposed_seconds * 1e3,
              100.0 * with.exposed_seconds / with.step_seconds);
  if (without.has_value()) {
    std::printf("step-time overhead          %8.1f%%\n",
                100.0 * (with.step_seconds - without->step_seconds) / with.step_seconds);
  }
}

}  // namespace

int DdpRank(const BenchArgs& args) {
  kernels::cpu::SetBlasThreads(1);
  auto start = ReadProcStats(::getpid());
  if (!start.ok()) return Fail(start.status(), 1);
  absl::StatusOr<v1::JobSpec> spec = BenchSpec(args);
  if (!spec.ok()) return Fail(spec.status(), 2);
  auto hosts = BenchRanks(*spec, args.ranks);
  if (!hosts.ok()) return Fail(hosts.status(), 2);
  auto assignment = BenchAssignment(*spec, args, *hosts);
  if (!assignment.ok()) return Fail(assignment.status(), 2);
  const absl::StatusOr<train::TrainConfig> config = train::TrainConfigFromAssignment(*assignment);
  if (!config.ok()) return Fail(config.status(), 2);
  auto kv = NewBenchKv(args.coordinator, args.cluster_token, 1);
  auto replica = train::CreateReplica(*config, {(*hosts)[args.rank].device, kv.get()});
  if (!replica.ok()) return Fail(replica.status(), 2);

  Figures sum;
  train::TrainHooks hooks;
  hooks.kv = kv.get();
  hooks.epoch_seed = [&](int epoch) -> absl::StatusOr<uint64_t> { return ddp::EpochSeed(config->seed, epoch); };
  hooks.on_step = [&sum](const v1::StepReport& r) {
    sum.step_seconds += r.step_seconds();
    sum.comm_seconds += r.communication_seconds();
    sum.exposed_seconds += r.exposed_communication_seconds();
    sum.samples += static_cast<double>(r.samples());
    sum.tokens += static_cast<double>(r.tokens());
  };
  auto loop = train::TrainLoop::Start(*config, **replica, hooks);
  if (!loop.ok()) return Fail(loop.status(), 2);
  comm::Communicator& comm = (*replica)->comm();
  std::vector<Figures> runs;
  for (const auto& [sync, steps] : {std::pair{train::GradSync::kAllReduce, kWarmupSteps},
                                    {train::GradSync::kAllReduce, args.steps},
                                    {train::GradSync::kLocalOnly, LocalSteps(args)}}) {
    if (steps == 0) continue;
    absl::StatusOr<Figures> f = Measure(**loop, sync, steps, &sum, comm);
    if (!f.ok()) return Fail(f.status(), 1);
    runs.push_back(*f);
  }
  auto memory = GatherMemory(**replica, static_cast<double>(start->rss_bytes), comm);
  if (!memory.ok()) return Fail(memory.status(), 1);
  if (args.rank == 0) {
    Print(**loop, **replica, *config, runs[1], runs.size() > 2 ? std::optional<Figures>(runs[2]) : std::nullopt);
    PrintMemory(*memory);
  }
  return 0;
}

}  // namespace gradsync::bench
