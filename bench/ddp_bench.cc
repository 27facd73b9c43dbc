// gradsync-bench ddp: a model's step time with gradient communication and without (every
// micro-step in no_sync mode), so the difference is the communication the overlap failed to
// hide. Also the reducer's own account: communication time and exposed time per step. The
// model, optimizer and communicator are the worker's replica (services/worker/replica.h) for
// --device and --backend: with one NCCL rank, the difference is the reducer's own overhead.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench_commands.h"
#include "gradsync/data/dataset.h"
#include "gradsync/ddp/reducer.h"
#include "gradsync/device/device.h"
#include "gradsync/kernels/cpu/blas_threads.h"
#include "gradsync/nn/model.h"
#include "gradsync/spec/job_spec.h"
#include "rank_env.h"
#include "replica.h"

namespace gradsync::bench {
namespace {

struct Figures {
  double step_seconds = 0;
  double comm_seconds = 0;
  double exposed_seconds = 0;
};

// The placement the bench asks for: --device and --backend; bf16 on a GPU unless the spec says fp32.
v1::Assignment BenchAssignment(const v1::JobSpec& spec, const BenchArgs& args) {
  v1::Assignment a;
  a.set_job_id("bench");
  a.set_rank(args.rank);
  a.set_world_size(args.ranks);
  *a.mutable_spec() = spec;
  a.mutable_placement()->set_device(args.device);
  a.mutable_placement()->set_backend(args.backend);
  a.mutable_placement()->set_precision(args.device == "cuda" && spec.model().precision() != "fp32" ? "bf16" : "fp32");
  return a;
}

// This rank's worker: the CPU, or GPU rank mod (GPUs visible).
worker::ReplicaOptions BenchWorker(const BenchArgs& args, const v1::JobSpec& spec, comm::KvClient* kv) {
  worker::ReplicaOptions o;
  o.kv = kv;
  o.gloo.timeout = absl::Minutes(2);
  o.gloo.shared_memory = spec.ddp().transport() != "tcp";
  const int gpus = static_cast<int>(device::ListGpus().size());
  auto d = device::ResolveDevice(args.device == "cuda" && gpus > 0 ? absl::StrCat("cuda:", args.rank % gpus) : "cpu");
  if (d.ok()) o.device = *d;
  return o;
}

}  // namespace

int DdpRank(const BenchArgs& args) {
  kernels::cpu::SetBlasThreads(1);
  auto spec = args.spec_path.empty() ? spec::ParseJobSpec("{}", "defaults", args.overrides)
                                     : spec::LoadJobSpecFile(args.spec_path, args.overrides);
  if (spec.ok()) spec = spec::Normalize(*spec);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().ToString().c_str());
    return 2;
  }
  auto env = ConnectRank(args.rank, args.ranks, args.coordinator);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.status().ToString().c_str());
    return 1;
  }
  // The model, optimizer and communicator exactly as a worker builds them for this placement.
  auto replica_kv = NewBenchKv(args.coordinator, 2);
  auto replica = worker::CreateReplica(BenchAssignment(*spec, args), BenchWorker(args, *spec, replica_kv.get()));
  auto data = data::CreateDataset(*spec);
  for (const absl::Status& s : {replica.status(), data.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 2;
    }
  }
  nn::Model& m = (*replica)->model();
  ddp::ReducerOptions ro;
  ro.bucket_cap_mb = spec->ddp().bucket_cap_mb();
  if (spec->ddp().first_bucket_mb() > 0) ro.first_bucket_mb = spec->ddp().first_bucket_mb();
  ro.wire = spec->ddp().grad_compression() == "bf16" ? comm::WireType::kBFloat16 : comm::WireType::kFloat32;
  auto reducer = ddp::Reducer::Create(m.layout(), m.grads(), &(*replica)->comm(), ro);
  if (!reducer.ok()) {
    std::fprintf(stderr, "%s\n", reducer.status().ToString().c_str());
    return 2;
  }
  const int micro = spec->training().micro_batch();
  nn::Batch batch;
  std::vector<int64_t> idx(micro);

  auto run = [&](bool sync, int steps) {
    Figures f;
    for (int s = 0; s < steps; ++s) {
      for (int i = 0; i < micro; ++i) idx[i] = (static_cast<int64_t>(s) * micro * args.ranks + args.rank * micro + i) % (*data)->size();
      (*data)->Fill(idx, &batch);
      const absl::Time t0 = absl::Now();
      m.ZeroGrads();
      (*reducer)->BeginStep(sync);
      auto loss = m.ForwardBackward(batch, 1.0f / (micro * args.ranks), [&](int a, int b) { (*reducer)->MarkReady(a, b); });
      const absl::Status finished = (*reducer)->FinishStep();
      for (const absl::Status& st : {loss.status(), finished}) {
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", st.ToString().c_str());
          std::exit(1);
        }
      }
      if (absl::Status st = (*replica)->Step(1e-4, 0).status(); !st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        std::exit(1);
      }
      f.step_seconds += absl::ToDoubleSeconds(absl::Now() - t0);
      f.comm_seconds += (*reducer)->timeline().communication_seconds;
      f.exposed_seconds += (*reducer)->timeline().exposed_seconds;
    }
    // Agree on the slowest rank's figures: a step is as slow as its slowest rank.
    std::vector<double> v = {f.step_seconds, f.comm_seconds, f.exposed_seconds};
    (void)env->comm->AllReduce(std::span<double>(v), comm::ReduceOp::kAverage)->Wait();
    return Figures{v[0] / steps, v[1] / steps, v[2] / steps};
  };

  run(true, 3);
  const Figures with = run(true, args.steps);
  const Figures without = run(false, args.steps);
  if (args.rank == 0) {
    const double samples = static_cast<double>(micro) * args.ranks;
    // Language models: every sample is a window of seqLen tokens; a classifier sample is one.
    const double tokens = samples * (batch.tokens.empty() ? 1.0 : static_cast<double>(batch.tokens.size()) / micro);
    std::printf("# gradsync-bench ddp: %s, %d ranks x micro-batch %d, %zu buckets, on %s\n", m.Describe().c_str(),
                args.ranks, micro, (*reducer)->buckets().size(), (*replica)->Describe().c_str());
    std::printf("step with communication     %8.2f ms  (%.0f samples/s, %.0f tokens/s)\n", with.step_seconds * 1e3,
                samples / with.step_seconds, tokens / with.step_seconds);
    std::printf("step without communication  %8.2f ms  (%.0f samples/s, %.0f tokens/s)\n", without.step_seconds * 1e3,
                samples / without.step_seconds, tokens / without.step_seconds);
    std::printf("communication per step      %8.2f ms  (sum over buckets)\n", with.comm_seconds * 1e3);
    std::printf("exposed per step            %8.2f ms  (%.1f%% of the step)\n", with.exposed_seconds * 1e3,
                100.0 * with.exposed_seconds / with.step_seconds);
    std::printf("step-time overhead          %8.1f%%\n", 100.0 * (with.step_seconds - without.step_seconds) / with.step_seconds);
  }
  return 0;
}

}  // namespace gradsync::bench
