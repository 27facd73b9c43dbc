// The reducer over real Gloo ranks (threads) formed through a real coordinator server.
#include "gradsync/ddp/reducer.h"

#include <cmath>

#include "gloo_ranks.h"
#include "gradsync/data/dataset.h"
#include "gradsync/ddp/layout_check.h"
#include "gradsync/nn/model.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::ddp {
namespace {

using gradsync::testing::CoordinatorServer;
using gradsync::testing::RunRanks;

v1::JobSpec Spec(std::vector<int> hidden = {64, 48, 32}) {
  v1::JobSpec spec;
  for (int h : hidden) spec.mutable_model()->mutable_mlp()->add_hidden_dims(h);
  spec.mutable_training()->set_max_steps(1);
  auto n = spec::Normalize(spec);
  EXPECT_TRUE(n.ok()) << n.status();
  return *n;
}

// Small buckets so the MLP spans several.
ReducerOptions SmallBuckets() {
  ReducerOptions o;
  o.first_bucket_mb = 0.004;  // 1K floats
  o.bucket_cap_mb = 0.01;     // 2.6K floats
  return o;
}

struct Replica {
  std::unique_ptr<nn::Model> model;
  std::unique_ptr<data::Dataset> data;
};

Replica MakeReplica(const v1::JobSpec& spec) {
  Replica r{*gradsync::testing::ModelOf(spec), *gradsync::testing::DatasetOf(spec)};
  r.model->InitParams(11);
  return r;
}

nn::Batch BatchOf(const Replica& r, int64_t first, int64_t count) {
  std::vector<int64_t> idx(count);
  for (int64_t i = 0; i < count; ++i) idx[i] = first + i;
  nn::Batch b;
  EXPECT_TRUE(r.data->Fill(idx, &b).ok());
  return b;
}

TEST(Reducer, BucketsCoverParametersInReverseContiguously) {
  v1::JobSpec spec = Spec();
  Replica r = MakeReplica(spec);
  auto reducer = Reducer::Create(r.model->layout(), r.model->grads(), nullptr, SmallBuckets());
  ASSERT_TRUE(reducer.ok()) << reducer.status();
  const auto& buckets = (*reducer)->buckets();
  ASSERT_GE(buckets.size(), 3u);
  int64_t end = r.model->layout().total_numel();
  int expect_last = r.model->layout().size();
  for (const Bucket& b : buckets) {
    EXPECT_EQ(b.offset + b.numel, end) << "bucket " << b.index << " is not contiguous with the previous";
    EXPECT_EQ(b.last_param, expect_last);
    end = b.offset;
    expect_last = b.first_param;
  }
  EXPECT_EQ(end, 0);
  EXPECT_LE(buckets[0].numel, 1024 + r.model->layout().param(r.model->layout().size() - 1).numel);
}

TEST(Reducer, AllReducedGradientsEqualTheSingleProcessGradientOfTheCombinedBatch) {
  const v1::JobSpec spec = Spec();
  constexpr int kWorld = 2, kPerRank = 12;
  // One process, the whole batch.
  Replica whole = MakeReplica(spec);
  whole.model->ZeroGrads();
  ASSERT_TRUE(whole.model->ForwardBackward(BatchOf(whole, 0, kWorld * kPerRank), 1.0f / (kWorld * kPerRank), {}).ok());
  const std::vector<float> expected(whole.model->grads().begin(), whole.model->grads().end());

  CoordinatorServer server;
  std::vector<std::vector<float>> got(kWorld);
  std::vector<int> bucket_counts(kWorld);
  RunRanks(server, "equal", kWorld, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    Replica r = MakeReplica(spec);
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, SmallBuckets());
    r.model->ZeroGrads();
    reducer->BeginStep(true);
    ASSERT_TRUE(r.model
                    ->ForwardBackward(BatchOf(r, rank * kPerRank, kPerRank), 1.0f / (kWorld * kPerRank),
                                      [&](int a, int b) { reducer->MarkReady(a, b); })
                    .ok());
    ASSERT_TRUE(reducer->FinishStep().ok());
    got[rank].assign(r.model->grads().begin(), r.model->grads().end());
    bucket_counts[rank] = static_cast<int>(reducer->buckets().size());
  });
  ASSERT_GT(bucket_counts[0], 2);
  EXPECT_EQ(got[0], got[1]) << "ranks must hold identical gradients";
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(got[0][i], expected[i], 1e-6 + 1e-5 * std::fabs(expected[i])) << "gradient " << i;
  }
}

TEST(Reducer, CommunicationStartsBeforeBackwardEnds) {
  const v1::JobSpec spec = Spec();
  CoordinatorServer server;
  RunRanks(server, "overlap", 2, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    Replica r = MakeReplica(spec);
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, SmallBuckets());
    reducer->BeginStep(true);
    ASSERT_TRUE(
        r.model->ForwardBackward(BatchOf(r, rank * 8, 8), 1.0f / 16, [&](int a, int b) { reducer->MarkReady(a, b); })
            .ok());
    ASSERT_TRUE(reducer->FinishStep().ok());
    const StepTimeline& t = reducer->timeline();
    ASSERT_FALSE(t.events.empty());
    // From the recorded order of events, not from clocks: bucket 0 went out while backward ran.
    EXPECT_EQ(t.events.front().kind, StepTimeline::EventKind::kBucketLaunched);
    EXPECT_EQ(t.events.front().bucket, 0);
    int launched_before_end = 0;
    for (const auto& e : t.events) {
      if (e.kind == StepTimeline::EventKind::kBackwardEnded) break;
      launched_before_end += e.kind == StepTimeline::EventKind::kBucketLaunched;
    }
    EXPECT_EQ(launched_before_end, static_cast<int>(reducer->buckets().size()))
        << "every bucket must be launched from backward's callbacks";
    for (const auto& b : t.buckets) EXPECT_LE(b.ready, b.done);
  });
}

TEST(Reducer, AccumulationCommunicatesOncePerOptimizerStep) {
  const v1::JobSpec spec = Spec();
  CoordinatorServer server;
  RunRanks(server, "accum", 2, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    Replica r = MakeReplica(spec);
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, SmallBuckets());
    const int64_t before = comm.sequence();
    r.model->ZeroGrads();
    for (int k = 0; k < 3; ++k) {
      reducer->BeginStep(k == 2);
      ASSERT_TRUE(r.model
                      ->ForwardBackward(BatchOf(r, 100 * k + rank * 4, 4), 1.0f / 24,
                                        [&](int a, int b) { reducer->MarkReady(a, b); })
                      .ok());
      ASSERT_TRUE(reducer->FinishStep().ok());
      EXPECT_EQ(reducer->timeline().communicated, k == 2);
      if (k < 2) {
        EXPECT_EQ(comm.sequence(), before) << "micro-step " << k << " communicated";
      }
    }
    EXPECT_EQ(comm.sequence() - before, static_cast<int64_t>(reducer->buckets().size()));
  });
}

TEST(Reducer, IgnoredParametersStayLocal) {
  const v1::JobSpec spec = Spec();
  ReducerOptions opts = SmallBuckets();
  opts.ignore_params = {"layers.0."};
  CoordinatorServer server;
  std::vector<std::vector<float>> got(2);
  int ignored_end = 0;
  RunRanks(server, "ignore", 2, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    Replica r = MakeReplica(spec);
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, opts);
    EXPECT_TRUE(reducer->ignored(0));
    EXPECT_TRUE(reducer->ignored(1));
    EXPECT_FALSE(reducer->ignored(2));
    r.model->ZeroGrads();
    reducer->BeginStep(true);
    ASSERT_TRUE(
        r.model->ForwardBackward(BatchOf(r, rank * 8, 8), 1.0f / 16, [&](int a, int b) { reducer->MarkReady(a, b); })
            .ok());
    ASSERT_TRUE(reducer->FinishStep().ok());
    got[rank].assign(r.model->grads().begin(), r.model->grads().end());
    ignored_end = static_cast<int>(r.model->layout().param(1).offset + r.model->layout().param(1).numel);
  });
  EXPECT_NE(std::vector<float>(got[0].begin(), got[0].begin() + ignored_end),
            std::vector<float>(got[1].begin(), got[1].begin() + ignored_end));
  EXPECT_EQ(std::vector<float>(got[0].begin() + ignored_end, got[0].end()),
            std::vector<float>(got[1].begin() + ignored_end, got[1].end()));
}

TEST(Reducer, AParameterNeverMarkedReadyIsNamed) {
  const v1::JobSpec spec = Spec();
  CoordinatorServer server;
  RunRanks(server, "missing", 1, [&](int, comm::Communicator& comm, comm::KvClient&) {
    Replica r = MakeReplica(spec);
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, SmallBuckets());
    reducer->BeginStep(true);
    reducer->MarkReady(2, r.model->layout().size());  // layers.0.* never reported
    absl::Status s = reducer->FinishStep();
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("layers.0."), std::string::npos) << s;
  });
}

TEST(Reducer, UnknownIgnorePatternIsRefused) {
  Replica r = MakeReplica(Spec());
  ReducerOptions opts;
  opts.ignore_params = {"nope."};
  auto reducer = Reducer::Create(r.model->layout(), r.model->grads(), nullptr, opts);
  EXPECT_EQ(reducer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reducer.status().message().find("ddp.ignoreParams"), std::string::npos);
}

TEST(LayoutCheck, AMismatchFailsEveryRankNamingTheParameter) {
  CoordinatorServer server;
  std::vector<absl::Status> results(2);
  RunRanks(server, "layout", 2, [&](int rank, comm::Communicator& comm, comm::KvClient& kv) {
    Replica r = MakeReplica(Spec(rank == 0 ? std::vector<int>{64, 48} : std::vector<int>{64, 40}));
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, SmallBuckets());
    results[rank] = CheckLayoutAcrossRanks(&kv, rank, 2, reducer->LayoutDescription(), absl::Seconds(10));
  });
  for (const absl::Status& s : results) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find("rank 1 differs from rank 0 at parameter 2"), std::string::npos) << s;
    EXPECT_NE(s.message().find("layers.1.weight [48,64]"), std::string::npos) << s;
    EXPECT_NE(s.message().find("layers.1.weight [40,64]"), std::string::npos) << s;
  }
}

TEST(LayoutCheck, EqualLayoutsPass) {
  CoordinatorServer server;
  RunRanks(server, "same", 3, [&](int rank, comm::Communicator& comm, comm::KvClient& kv) {
    Replica r = MakeReplica(Spec());
    auto reducer = *Reducer::Create(r.model->layout(), r.model->grads(), &comm, SmallBuckets());
    EXPECT_TRUE(CheckLayoutAcrossRanks(&kv, rank, 3, reducer->LayoutDescription(), absl::Seconds(10)).ok());
  });
}

}  // namespace
}  // namespace gradsync::ddp
