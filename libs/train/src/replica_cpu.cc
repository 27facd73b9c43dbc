// The CPU replica: the host model of libs/nn, AdamW and clipping on the host, Gloo; sharded data
// parallel (ddp.sharding "optimizer", "gradients" and "full").
#include <cmath>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gradsync/ddp/param_gather.h"
#include "gradsync/ddp/shard_plan.h"
#include "gradsync/kernels/cpu/global_norm.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/train/replica.h"

namespace gradsync::train {
namespace internal {
namespace {

// With sharding (ddp.sharding other than "none"; gradsync/ddp/shard_plan.h) rank r owns its shard
// of the flat parameters: it keeps AdamW's moments for them alone and updates them alone. With
// "optimizer" and "gradients" the updated shards are all-gathered into every rank's parameters;
// with "full" they stay where they are, the model gathering each layer's parameters through
// gather_ as it computes, and the rest of params() holds no memory between layers.
class CpuReplica final : public Replica {
 public:
  CpuReplica(std::unique_ptr<comm::Communicator> comm, std::unique_ptr<nn::Model> model, const nn::AdamWConfig& adamw,
             spec::Sharding sharding)
      : comm_(std::move(comm)),
        model_(std::move(model)),
        shards_(sharding, model_->layout().total_numel(), comm_->rank(), comm_->size()),
        optimizer_(model_->layout(), adamw, shards_.optimizer_range().first, shards_.optimizer_range().second) {
    if (params_sharded()) {
      gather_ = std::make_unique<ddp::ParamGather>(model_.get(), comm_.get(), shards_.bounds());
      model_->set_param_gate(gather_.get());
    }
  }

  ~CpuReplica() override {
    model_->set_param_gate(nullptr);
    gather_.reset();  // waits for gathers in flight, before the communicator goes
  }

  nn::Model& model() override { return *model_; }
  comm::Communicator& comm() override { return *comm_; }
  const ddp::ShardPlan& shards() const override { return shards_; }

  void InitParams(uint64_t seed) override {
    if (!params_sharded()) return model_->InitParams(seed);
    gather_->InitParams(seed);
  }

  void ZeroGrads() override {
    if (!shards_.grads_sharded()) return model_->ZeroGrads();
    model_->DiscardGrads(0, model_->layout().total_numel());
  }

  absl::StatusOr<double> Step(double lr, double max_norm) override {
    absl::StatusOr<double> norm = clip_scope_.empty() ? ClipByShards(max_norm) : ClipScoped(max_norm);
    if (!norm.ok()) return norm.status();
    optimizer_.Step(model_->params(), model_->grads(), lr);
    if (shards_.optimizer_sharded() && !params_sharded()) {
      if (absl::Status s = comm_->AllGatherBlocks(model_->params(), shards_.bounds())->Wait(); !s.ok()) return s;
    }
    return norm;
  }

  absl::Status SetClipScope(std::vector<int> params) override {
    if (shards_.optimizer_sharded())
      return absl::FailedPreconditionError("ddp.sharding shards every parameter; none is rank-local");
    clip_scope_ = std::move(params);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<float>> HostParams() override {
    if (params_sharded()) {
      if (absl::Status s = comm_->AllGatherBlocks(model_->params(), shards_.bounds())->Wait(); !s.ok()) return s;
    }
    std::vector<float> params(model_->params().begin(), model_->params().end());
    if (params_sharded()) gather_->DiscardUnowned(0, model_->layout().size());
    return params;
  }

  absl::Status SaveState(int64_t begin, int64_t end, ckpt::RankState* state) override {
    // The moments this rank holds cover [optimizer_.begin(), optimizer_.end()).
    if (begin < optimizer_.begin() || end > optimizer_.end() || begin > end) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint shard [", begin, ", ", end, ") is not within [",
                                                     optimizer_.begin(), ", ", optimizer_.end(),
                                                     "), the optimizer state this rank holds"));
    }
    const auto from = [&](std::span<const float> v, int64_t offset) { return v.subspan(begin - offset, end - begin); };
    const std::span<const float> params = from(model_->params(), 0);
    const std::span<const float> m = from(optimizer_.first_moment(), optimizer_.begin());
    const std::span<const float> v = from(optimizer_.second_moment(), optimizer_.begin());
    state->shard_begin = begin;
    state->params.assign(params.begin(), params.end());
    state->adam_m.assign(m.begin(), m.end());
    state->adam_v.assign(v.begin(), v.end());
    state->adam_step = optimizer_.step_count();
    return absl::OkStatus();
  }

  std::pair<int64_t, int64_t> StateRange() const override { return {optimizer_.begin(), optimizer_.end()}; }

  absl::Status LoadState(const ckpt::RankState& state) override {
    const int64_t begin = optimizer_.begin(), n = optimizer_.end() - begin;
    if (absl::Status s = CoversRange(state, begin, n); !s.ok()) return s;
    const auto at = static_cast<size_t>(begin - state.shard_begin);
    // The moments first: Restore checks their sizes, so a refused state changes nothing.
    if (absl::Status s = optimizer_.Restore(std::span<const float>(state.adam_m).subspan(at, n),
                                            std::span<const float>(state.adam_v).subspan(at, n), state.adam_step);
        !s.ok()) {
      return s;
    }
    const std::span<float> params = model_->params();
    if (params_sharded() || !HoldsAll(state, params.size())) {
      // This rank's shard alone; sharded parameters leave the rest given back, whole ones gather it.
      std::copy_n(state.params.begin() + static_cast<std::ptrdiff_t>(at), n, params.begin() + begin);
      if (params_sharded()) return absl::OkStatus();
      return comm_->AllGatherBlocks(params, shards_.bounds())->Wait();
    }
    std::copy(state.params.begin(), state.params.end(), params.begin());
    return absl::OkStatus();
  }

  MemoryFootprint Memory() const override {
    const auto floats = static_cast<int64_t>(sizeof(float));
    const int64_t total = model_->layout().total_numel(), shard = optimizer_.end() - optimizer_.begin();
    const int64_t params = params_sharded() ? shard + gather_->peak_gathered() : total;
    return {params * floats, (shards_.grads_sharded() ? shard : total) * floats, 2 * shard * floats};
  }

  bool HostMemory() const override { return true; }

  std::string Describe() const override {
    return absl::StrCat("cpu, fp32, ", comm_->backend(), shards_.DescribeSuffix());
  }

 private:
  // The global norm as every sharding mode computes it, so that the clip factor has the same bits
  // whoever holds which gradients: each shard's sum of squares in double, the sums added in rank
  // order. Holding only its shard's reduced gradients ("gradients", "full"), a rank all-reduces a vector
  // holding its own sum at its rank's index and zeros elsewhere, which is exact in any order of
  // additions. Scales what this rank's optimizer reads.
  absl::StatusOr<double> ClipByShards(double max_norm) {
    const std::span<float> grads = model_->grads();
    const std::vector<int64_t>& bounds = shards_.bounds();
    std::vector<double> sums(static_cast<size_t>(comm_->size()), 0.0);
    for (int r = 0; r < comm_->size(); ++r) {
      if (shards_.grads_sharded() && r != comm_->rank()) continue;
      sums[r] = kernels::cpu::SumOfSquares(grads.data() + bounds[r], bounds[r + 1] - bounds[r]);
    }
    if (shards_.grads_sharded() && comm_->size() > 1) {
      if (absl::Status s = comm_->AllReduceSum(std::span<double>(sums)); !s.ok()) return s;
    }
    double total = 0;
    for (const double x : sums) total += x;
    const double norm = std::sqrt(total);
    if (max_norm > 0.0 && norm > max_norm) {
      kernels::cpu::Scale(grads.data() + optimizer_.begin(), optimizer_.end() - optimizer_.begin(),
                          static_cast<float>(max_norm / norm));
    }
    return norm;
  }

  // ClipGlobalNorm with the norm over clip_scope_'s parameters (ddp.ignoreParams, never sharded).
  double ClipScoped(double max_norm) {
    const nn::ParamLayout& layout = model_->layout();
    double sum_sq = 0;
    for (int i : clip_scope_) {
      const double n = nn::GlobalNorm(layout.View(std::span<const float>(model_->grads()), i));
      sum_sq += n * n;
    }
    const double norm = std::sqrt(sum_sq);
    if (max_norm > 0.0 && norm > max_norm) {
      for (float& g : model_->grads()) g *= static_cast<float>(max_norm / norm);
    }
    return norm;
  }

  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<nn::Model> model_;
  const ddp::ShardPlan shards_;
  nn::AdamW optimizer_;
  // Empty: every parameter.
  std::vector<int> clip_scope_;
  // ddp.sharding "full": the model's gate.
  std::unique_ptr<ddp::ParamGather> gather_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Replica>> CreateCpuReplica(const TrainConfig& c, const ReplicaOptions& options) {
  if (c.placement.backend == spec::Backend::kNccl) {
    return absl::FailedPreconditionError("placement: nccl reduces GPU memory and this rank computes on its CPU");
  }
  // Sharded parameters are initialised per shard later (Replica::InitParams).
  const spec::Sharding sharding = c.plan.sharding;
  std::unique_ptr<nn::Model> model = nn::CreateModel(
      c.plan.model, sharding == spec::Sharding::kFull ? nn::ModelInit::kNone : nn::ModelInit::kFromSeed);
  if (sharding == spec::Sharding::kFull && !model->supports_param_gate()) {
    return absl::FailedPreconditionError(
        absl::StrCat("ddp.sharding \"full\" needs a model that gathers its layers' parameters, and ", model->Describe(),
                     " does not"));
  }
  auto comm = comm::ConnectGloo(options.kv, c.rank, c.world_size, GlooOptionsOf(c, options));
  if (!comm.ok()) return comm.status();
  return std::make_unique<CpuReplica>(*std::move(comm), std::move(model), c.adamw, sharding);
}

absl::Status CoversRange(const ckpt::RankState& state, int64_t begin, int64_t n) {
  const auto held = static_cast<int64_t>(state.params.size());
  if (state.adam_m.size() != state.params.size() || state.adam_v.size() != state.params.size() ||
      begin < state.shard_begin || begin + n > state.shard_begin + held) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a state of elements [", state.shard_begin, ", ", state.shard_begin + held, ") with ", state.adam_m.size(), "/",
        state.adam_v.size(), " moments does not cover this rank's [", begin, ", ", begin + n, ")"));
  }
  return absl::OkStatus();
}

bool HoldsAll(const ckpt::RankState& state, size_t total) {
  return state.shard_begin == 0 && state.params.size() == total;
}

comm::GlooOptions GlooOptionsOf(const TrainConfig& c, const ReplicaOptions& options) {
  comm::GlooOptions o;
  o.hostname = options.comm_host;
  o.timeout = c.comm_timeout;
  o.shared_memory = c.shared_memory;
  return o;
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<Replica>> CreateReplica(const TrainConfig& c, const ReplicaOptions& options) {
  if (c.placement.device == spec::Device::kCuda) {
    return internal::CreateCudaReplica(c, options);
  }
  return internal::CreateCpuReplica(c, options);
}

}  // namespace gradsync::train
