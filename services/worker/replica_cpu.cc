// The CPU replica: the host model of libs/nn, AdamW and clipping on the host, Gloo.
#include <cmath>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gradsync/nn/optimizer.h"
#include "replica.h"

namespace gradsync::worker {
namespace internal {
namespace {

class CpuReplica final : public Replica {
 public:
  CpuReplica(std::unique_ptr<comm::Communicator> comm, std::unique_ptr<nn::Model> model, const nn::AdamWConfig& adamw)
      : comm_(std::move(comm)), model_(std::move(model)), optimizer_(model_->layout(), adamw) {}

  nn::Model& model() override { return *model_; }
  comm::Communicator& comm() override { return *comm_; }

  absl::StatusOr<double> Step(double lr, double max_norm) override {
    const double norm = clip_scope_.empty() ? nn::ClipGlobalNorm(model_->grads(), max_norm) : ClipScoped(max_norm);
    optimizer_.Step(model_->params(), model_->grads(), lr);
    return norm;
  }

  absl::Status SetClipScope(std::vector<int> params) override {
    clip_scope_ = std::move(params);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<float>> HostParams() override {
    return std::vector<float>(model_->params().begin(), model_->params().end());
  }

  absl::Status SaveState(ckpt::RankState* state) override {
    state->params.assign(model_->params().begin(), model_->params().end());
    state->adam_m.assign(optimizer_.first_moment().begin(), optimizer_.first_moment().end());
    state->adam_v.assign(optimizer_.second_moment().begin(), optimizer_.second_moment().end());
    state->adam_step = optimizer_.step_count();
    return absl::OkStatus();
  }

  absl::Status LoadState(const ckpt::RankState& state) override {
    // The moments first: Restore checks their sizes, so a refused state changes nothing.
    if (absl::Status s = optimizer_.Restore(state.adam_m, state.adam_v, state.adam_step); !s.ok()) return s;
    std::copy(state.params.begin(), state.params.end(), model_->params().begin());
    return absl::OkStatus();
  }

  std::string Describe() const override { return absl::StrCat("cpu, fp32, ", comm_->backend()); }

 private:
  // ClipGlobalNorm with the norm over clip_scope_'s parameters.
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
  nn::AdamW optimizer_;
  // Empty: every parameter.
  std::vector<int> clip_scope_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Replica>> CreateCpuReplica(const TrainConfig& c, const ReplicaOptions& options) {
  if (c.placement.backend == spec::Backend::kNccl) {
    return absl::FailedPreconditionError("placement: nccl reduces GPU memory and this rank computes on its CPU");
  }
  auto model = nn::CreateModel(c.spec);
  if (!model.ok()) return model.status();
  auto comm = comm::ConnectGloo(options.kv, c.rank, c.world_size, GlooOptionsOf(c, options));
  if (!comm.ok()) return comm.status();
  return std::make_unique<CpuReplica>(*std::move(comm), *std::move(model), c.adamw);
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
  if (c.placement.device == spec::Device::kCuda) return internal::CreateCudaReplica(c, options);
  return internal::CreateCpuReplica(c, options);
}

}  // namespace gradsync::worker
