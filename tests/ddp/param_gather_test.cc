// The parameter gate of ddp.sharding "full" over real Gloo ranks (threads): a model whose ranks
// keep only their shards of the parameters computes bit for bit what the whole model computes,
// gathers each unit once, and holds no more than its shard between passes.
#include "gradsync/ddp/param_gather.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../nn/transformer_util.h"
#include "gloo_ranks.h"
#include "gradsync/data/dataset.h"
#include "gradsync/nn/model.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::ddp {
namespace {

using gradsync::testing::CoordinatorServer;
using gradsync::testing::RunRanks;

const int64_t kPage = sysconf(_SC_PAGESIZE);

v1::JobSpec MlpSpec() {
  v1::JobSpec spec;
  for (int h : {96, 80, 64}) spec.mutable_model()->mutable_mlp()->add_hidden_dims(h);
  spec.mutable_training()->set_max_steps(1);
  spec.mutable_training()->set_seed(5);
  absl::StatusOr<v1::JobSpec> n = spec::Normalize(spec);
  EXPECT_TRUE(n.ok()) << n.status();
  return *n;
}

// The tiny transformer of the nn tests, wide enough that its parameters span many pages.
v1::JobSpec TransformerSpec(const std::string& flavour) {
  v1::JobSpec spec = nn::testing::TinySpec(flavour);
  v1::TransformerConfig* t = spec.mutable_model()->mutable_transformer();
  t->set_width(64);
  t->set_mlp_width(160);
  t->set_heads(4);
  t->set_kv_heads(flavour == "gpt2" ? 4 : 2);
  t->set_vocab_size(flavour == "gpt2" ? 301 : 300);  // totals 3 does not divide
  return spec;
}

v1::JobSpec SpecOf(const std::string& model) { return model == "mlp" ? MlpSpec() : TransformerSpec(model); }

nn::Batch BatchFor(const v1::JobSpec& spec, int64_t size, uint64_t seed) {
  if (spec.model().preset() != "mlp") {
    const v1::TransformerConfig& t = spec.model().transformer();
    return nn::testing::RandomTokens(size, t.seq_len(), static_cast<int>(t.vocab_size()), seed);
  }
  auto data = gradsync::testing::DatasetOf(spec);
  EXPECT_TRUE(data.ok()) << data.status();
  std::vector<int64_t> idx(size);
  for (int64_t i = 0; i < size; ++i) idx[i] = static_cast<int64_t>(seed) + i;
  nn::Batch b;
  EXPECT_TRUE((*data)->Fill(idx, &b).ok());
  return b;
}

// What one model computes on the batch.
struct Outputs {
  nn::LossSum train, eval;
  std::vector<float> grads, logits;
};

Outputs Compute(nn::Model& model, const nn::Batch& batch) {
  Outputs out;
  model.ZeroGrads();
  absl::StatusOr<nn::LossSum> train = model.ForwardBackward(batch, 0.125f, {});
  EXPECT_TRUE(train.ok()) << train.status();
  absl::StatusOr<nn::LossSum> eval = model.Evaluate(batch);
  EXPECT_TRUE(eval.ok()) << eval.status();
  absl::StatusOr<std::vector<float>> logits = model.Predict(batch);
  EXPECT_TRUE(logits.ok()) << logits.status();
  if (!train.ok() || !eval.ok() || !logits.ok()) return out;
  out.train = *train;
  out.eval = *eval;
  out.grads.assign(model.grads().begin(), model.grads().end());
  out.logits = *logits;
  return out;
}

// Rank r's parameters outside its shard read zero, and those inside hold `whole`'s values.
void ExpectOnlyTheShard(const nn::Model& model, const std::vector<float>& whole, int64_t begin, int64_t end) {
  for (int64_t i = 0; i < static_cast<int64_t>(whole.size()); ++i) {
    const float want = (i >= begin && i < end) ? whole[i] : 0.0f;
    ASSERT_EQ(model.params()[i], want) << "parameter element " << i << ", shard [" << begin << ", " << end << ")";
  }
}

class ParamGatherTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ParamGatherTest, ShardedPassesComputeBitForBitWhatTheWholeModelComputes) {
  const v1::JobSpec spec = SpecOf(GetParam());
  constexpr int kWorld = 3;
  const nn::Batch batch = BatchFor(spec, 4, 17);
  std::unique_ptr<nn::Model> reference = *gradsync::testing::ModelOf(spec);
  const std::vector<float> whole(reference->params().begin(), reference->params().end());
  const Outputs expected = Compute(*reference, batch);
  // A parameter count the world size does not divide, so the shards are uneven.
  ASSERT_NE(reference->layout().total_numel() % kWorld, 0);

  CoordinatorServer server;
  RunRanks(server, "gather-" + GetParam(), kWorld, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    std::unique_ptr<nn::Model> model = *gradsync::testing::ModelOf(spec);
    ASSERT_TRUE(model->supports_param_gate());
    const std::vector<int64_t> bounds = comm::EvenBounds(model->layout().total_numel(), kWorld);
    ParamGather gate(model.get(), &comm, bounds);
    gate.DiscardUnowned(0, model->layout().size());
    ExpectOnlyTheShard(*model, whole, bounds[rank], bounds[rank + 1]);
    model->set_param_gate(&gate);

    const Outputs got = Compute(*model, batch);
    EXPECT_EQ(got.train.sum, expected.train.sum);
    EXPECT_EQ(got.train.count, expected.train.count);
    EXPECT_EQ(got.eval.sum, expected.eval.sum);
    EXPECT_EQ(got.grads, expected.grads) << "rank " << rank;
    EXPECT_EQ(got.logits, expected.logits) << "rank " << rank;
    // Every unit was given back after its pass.
    ExpectOnlyTheShard(*model, whole, bounds[rank], bounds[rank + 1]);
    model->set_param_gate(nullptr);
  });
}

TEST_P(ParamGatherTest, ARankWithAnEmptyBatchStillJoinsEveryGather) {
  const v1::JobSpec spec = SpecOf(GetParam());
  const nn::Batch batch = BatchFor(spec, 3, 4);
  nn::Batch empty = batch;
  empty.size = 0;
  empty.features.clear();
  empty.tokens.clear();
  empty.targets.clear();
  std::unique_ptr<nn::Model> reference = *gradsync::testing::ModelOf(spec);
  const absl::StatusOr<nn::LossSum> expected = reference->Evaluate(batch);
  ASSERT_TRUE(expected.ok()) << expected.status();

  CoordinatorServer server;
  RunRanks(server, "empty-" + GetParam(), 2, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    std::unique_ptr<nn::Model> model = *gradsync::testing::ModelOf(spec);
    ParamGather gate(model.get(), &comm, comm::EvenBounds(model->layout().total_numel(), 2));
    gate.DiscardUnowned(0, model->layout().size());
    model->set_param_gate(&gate);
    const absl::StatusOr<nn::LossSum> got = model->Evaluate(rank == 0 ? batch : empty);
    ASSERT_TRUE(got.ok()) << got.status();
    if (rank == 0) {
      EXPECT_EQ(got->sum, expected->sum);
    } else {
      EXPECT_EQ(got->count, 0);
    }
    model->ZeroGrads();
    int ready = 0;
    ASSERT_TRUE(model->ForwardBackward(rank == 0 ? batch : empty, 1.0f, [&](int, int) { ++ready; }).ok());
    EXPECT_GT(ready, 0);
    model->set_param_gate(nullptr);
  });
}

INSTANTIATE_TEST_SUITE_P(Models, ParamGatherTest, ::testing::Values("mlp", "gpt2", "llama"));

// An MLP of K layers: forward gathers each layer once, backward keeps the last layer and gathers
// the other K - 1 again, each fetched while the layer before it computes.
TEST(ParamGather, GathersEachUnitOncePerUseAndPrefetchesTheNext) {
  const v1::JobSpec spec = MlpSpec();
  const nn::Batch batch = BatchFor(spec, 4, 0);
  CoordinatorServer server;
  RunRanks(server, "count", 2, [&](int, comm::Communicator& comm, comm::KvClient&) {
    std::unique_ptr<nn::Model> model = *gradsync::testing::ModelOf(spec);
    const int layers = model->layout().size() / 2;
    ASSERT_EQ(layers, 4);
    ParamGather gate(model.get(), &comm, comm::EvenBounds(model->layout().total_numel(), 2));
    gate.DiscardUnowned(0, model->layout().size());
    model->set_param_gate(&gate);
    int64_t before = comm.sequence();
    ASSERT_TRUE(model->ForwardBackward(batch, 1.0f, {}).ok());
    EXPECT_EQ(comm.sequence() - before, 2 * layers - 1);
    before = comm.sequence();
    ASSERT_TRUE(model->Evaluate(batch).ok());
    EXPECT_EQ(comm.sequence() - before, layers);
    // At most the unit computing and the one being fetched, never the whole model.
    const nn::ParamLayout& layout = model->layout();
    std::vector<int64_t> unit_sizes;
    for (int i = 0; i < layers; ++i) unit_sizes.push_back(layout.param(2 * i).numel + layout.param(2 * i + 1).numel);
    std::sort(unit_sizes.rbegin(), unit_sizes.rend());
    EXPECT_GT(gate.peak_gathered(), 0);
    EXPECT_LE(gate.peak_gathered(), unit_sizes[0] + unit_sizes[1]);
    model->set_param_gate(nullptr);

    // Directly: acquiring a unit issues its gather and the next one's; the next is then ready.
    const nn::ParamUnit first = {{0, 2}}, second = {{2, 4}};
    before = comm.sequence();
    ASSERT_TRUE(gate.Acquire(first, &second).ok());
    EXPECT_EQ(comm.sequence() - before, 2);
    gate.Release(first);
    ASSERT_TRUE(gate.Acquire(second, nullptr).ok());
    EXPECT_EQ(comm.sequence() - before, 2);
    gate.Release(second);
  });
}

// The memory itself: between passes a rank's parameter pages outside its shard are back with the
// system (mincore), leaving at most the partial pages at the ends of each unit's range.
TEST(ParamGather, ARankHoldsOnlyItsShardsPagesBetweenPasses) {
  const v1::JobSpec spec = TransformerSpec("gpt2");
  const nn::Batch batch = BatchFor(spec, 2, 9);
  CoordinatorServer server;
  RunRanks(server, "resident", 2, [&](int rank, comm::Communicator& comm, comm::KvClient&) {
    std::unique_ptr<nn::Model> model = *gradsync::testing::ModelOf(spec);
    const int64_t total = model->layout().total_numel();
    ASSERT_GT(total * 4, 64 * kPage);
    EXPECT_GE(model->ResidentParamBytes(), total * 4);
    const std::vector<int64_t> bounds = comm::EvenBounds(total, 2);
    const int64_t shard = (bounds[rank + 1] - bounds[rank]) * 4;
    ParamGather gate(model.get(), &comm, bounds);
    gate.DiscardUnowned(0, model->layout().size());
    EXPECT_LE(model->ResidentParamBytes(), shard + 2 * kPage);
    model->set_param_gate(&gate);
    ASSERT_TRUE(model->ForwardBackward(batch, 1.0f, {}).ok());
    // Units: the embeddings, 2 blocks, the head (two ranges).
    const int64_t edges = 2 * 5 * kPage;
    EXPECT_LE(model->ResidentParamBytes(), shard + 2 * kPage + edges);
    EXPECT_LT(gate.peak_gathered(), total / 2 + 1);
    model->set_param_gate(nullptr);
  });
}

}  // namespace
}  // namespace gradsync::ddp
