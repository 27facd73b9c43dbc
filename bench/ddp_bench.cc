// gradsync-bench ddp: a model's step time with gradient communication and without (every
// micro-step in no_sync mode), so the difference is the communication the overlap failed to
// hide. Also the reducer's own account: communication time and exposed time per step.
#include <cstdio>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "bench_commands.h"
#include "gradsync/data/dataset.h"
#include "gradsync/ddp/reducer.h"
#include "gradsync/kernels/cpu/blas_threads.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/spec/job_spec.h"
#include "rank_env.h"

namespace gradsync::bench {
namespace {

struct Figures {
  double step_seconds = 0;
  double comm_seconds = 0;
  double exposed_seconds = 0;
};

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
  auto model = nn::CreateModel(*spec);
  auto data = data::CreateDataset(*spec);
  if (!model.ok() || !data.ok()) {
    std::fprintf(stderr, "%s %s\n", model.status().ToString().c_str(), data.status().ToString().c_str());
    return 2;
  }
  nn::Model& m = **model;
  ddp::ReducerOptions ro;
  ro.bucket_cap_mb = spec->ddp().bucket_cap_mb();
  if (spec->ddp().first_bucket_mb() > 0) ro.first_bucket_mb = spec->ddp().first_bucket_mb();
  ro.wire = spec->ddp().grad_compression() == "bf16" ? comm::WireType::kBFloat16 : comm::WireType::kFloat32;
  auto reducer = ddp::Reducer::Create(m.layout(), m.grads(), env->comm.get(), ro);
  if (!reducer.ok()) {
    std::fprintf(stderr, "%s\n", reducer.status().ToString().c_str());
    return 2;
  }
  nn::AdamW opt(m.layout(), {});
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
      (void)m.ForwardBackward(batch, 1.0f / (micro * args.ranks), [&](int a, int b) { (*reducer)->MarkReady(a, b); });
      (void)(*reducer)->FinishStep();
      opt.Step(m.params(), m.grads(), 1e-4);
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
    std::printf("# gradsync-bench ddp: %s, %d ranks x micro-batch %d, %zu buckets, %s\n", m.Describe().c_str(),
                args.ranks, micro, (*reducer)->buckets().size(), env->comm->backend().c_str());
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
