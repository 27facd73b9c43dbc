// The GPU replica: the CUDA model of libs/nn/cuda in the placement's precision, clipping and
// AdamW on the device, and NCCL (or Gloo staged through pinned host memory) ordered after the
// model's stream. Built only with CUDA; replica_no_cuda.cc stands in otherwise.
//
// ddp.sharding "optimizer" (ZeRO-1, as llm.c does it): rank r keeps AdamW's moments for
// its shard (gradsync/ddp/shard_plan.h) of the flat parameters alone, updates them alone, and the updated
// shards are all-gathered (AllGatherBlocks: one grouped broadcast per block on NCCL). The
// gradients are all-reduced whole, so the clip's norm covers all of them on every rank.
//
// ddp.sharding "gradients" (ZeRO-2): the reducer reduce-scatters each bucket instead
// (ReduceScatterBlocks: one grouped reduce per block to its owner on NCCL), so a rank holds the
// reduced gradients of its shard alone, and gives the chunks of each reduced bucket outside its
// shard back to the device (the model's gradients are kernels::cuda::DevicePages): ZeroGrads
// gives back all of them, backward maps each layer's again as it writes them, and the reducer
// discards a bucket's unowned part once its reduce-scatter is done. The clip's norm is then the
// sum of the ranks' shard sums of squares, all-reduced as one device float before the factor.
//
// ddp.sharding "full" (ZeRO-3 / FSDP FULL_SHARD): as "gradients", and the parameters live
// sharded too. The model brackets each unit (the embeddings, a block, the head) with the gate,
// ddp::ParamGather over this replica's communicator: a unit's parameters are mapped back and
// all-gathered before it computes, the next unit's fetched meanwhile, and the chunks outside
// this rank's shard given back once the unit's kernels are done. No all-gather follows the step.
#include <cuda_runtime_api.h>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/nccl.h"
#include "gradsync/ddp/param_gather.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/nn/cuda/cuda_model.h"
#include "gradsync/nn/cuda/cuda_optimizer.h"
#include "gradsync/train/replica.h"

namespace gradsync::train {
namespace internal {
namespace {

using kernels::cuda::CudaStatus;

// Owns one non-blocking CUDA stream.
class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  absl::Status Create() {
    return CudaStatus(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaReplica final : public Replica {
 public:
  static absl::StatusOr<std::unique_ptr<Replica>> Create(const TrainConfig& c, const ReplicaOptions& options);

  ~CudaReplica() override {
    if (model_ != nullptr) model_->set_param_gate(nullptr);
    gather_.reset();  // waits for gathers in flight, before the communicator goes
  }

  nn::Model& model() override { return *model_; }
  comm::Communicator& comm() override { return *comm_; }
  const ddp::ShardPlan& shards() const override { return *shards_; }

  void InitParams(uint64_t seed) override {
    if (!params_sharded()) return model_->InitParams(seed);
    gather_->InitParams(seed);
  }

  absl::StatusOr<double> Step(double lr, double max_norm) override {
    if (absl::Status s = Use(); !s.ok()) return s;
    if (absl::Status s = shards_->grads_sharded() ? ClipByShards(max_norm) : clip_->Compute(model_->grads(), max_norm);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = adamw_->Step(model_->params(), model_->grads(), lr, clip_->scale()); !s.ok()) return s;
    if (shards_->optimizer_sharded() && !params_sharded()) {
      if (absl::Status s = comm_->AllGatherBlocks(model_->params(), shards_->bounds())->Wait(); !s.ok()) return s;
    }
    return clip_->ReadNorm();
  }

  void ZeroGrads() override {
    if (!shards_->grads_sharded()) return model_->ZeroGrads();
    // Every chunk back to the device: the last step's readers of the gradients (clip, AdamW) are
    // done once the stream is.
    if (absl::Status s = model_->Synchronize(); !s.ok()) {
      return model_->ZeroGrads();  // the error surfaces at the next call that returns a status
    }
    model_->DiscardGrads(0, model_->layout().total_numel());
  }

  absl::Status SetClipScope(std::vector<int>) override {
    return absl::FailedPreconditionError(
        "ddp.ignoreParams with training.gradClip: the GPU clips by the norm of every gradient, ignored ones "
        "included, so the ranks would clip by different factors and diverge; set training.gradClip to 0");
  }

  absl::StatusOr<std::vector<float>> HostParams() override {
    const std::span<float> params = model_->params();
    if (params_sharded()) {
      // Gathered whole once (a collective), copied, and given back.
      if (absl::Status s = model_->CommitParams(0, static_cast<int64_t>(params.size())); !s.ok()) return s;
      if (absl::Status s = comm_->AllGatherBlocks(params, shards_->bounds())->Wait(); !s.ok()) return s;
    }
    std::vector<float> host(params.size());
    absl::Status copied = ToHost(params, host);
    if (params_sharded()) gather_->DiscardUnowned(0, model_->layout().size());
    if (!copied.ok()) return copied;
    return host;
  }

  absl::Status SaveState(int64_t begin, int64_t end, ckpt::RankState* state) override {
    // The moments this rank holds cover [adamw_->begin(), adamw_->end()).
    if (begin < adamw_->begin() || end > adamw_->end() || begin > end) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint shard [", begin, ", ", end, ") is not within [",
                                                     adamw_->begin(), ", ", adamw_->end(),
                                                     "), the optimizer state this rank holds"));
    }
    const auto n = static_cast<size_t>(end - begin);
    const auto moments_at = static_cast<size_t>(begin - adamw_->begin());
    state->shard_begin = begin;
    state->params.resize(n);
    state->adam_m.resize(n);
    state->adam_v.resize(n);
    state->adam_step = adamw_->step_count();
    if (absl::Status s = ToHost(model_->params().subspan(begin, n), state->params); !s.ok()) return s;
    if (absl::Status s = ToHost(adamw_->first_moment().subspan(moments_at, n), state->adam_m); !s.ok()) return s;
    return ToHost(adamw_->second_moment().subspan(moments_at, n), state->adam_v);
  }

  std::pair<int64_t, int64_t> StateRange() const override { return {adamw_->begin(), adamw_->end()}; }

  absl::Status LoadState(const ckpt::RankState& state) override {
    if (absl::Status s = Use(); !s.ok()) return s;
    const int64_t begin = adamw_->begin(), n = adamw_->end() - begin;
    if (absl::Status s = CoversRange(state, begin, n); !s.ok()) return s;
    const auto at = static_cast<size_t>(begin - state.shard_begin);
    // The moments first: Restore checks their sizes, so a refused state changes nothing.
    if (absl::Status s = adamw_->Restore(std::span<const float>(state.adam_m).subspan(at, n),
                                         std::span<const float>(state.adam_v).subspan(at, n), state.adam_step);
        !s.ok()) {
      return s;
    }
    // The whole parameters when `state` has them and the rank keeps them whole; this rank's shard
    // otherwise, the rest gathered where the rank keeps them whole.
    const std::span<float> params = model_->params();
    const bool all = !params_sharded() && HoldsAll(state, params.size());
    const std::span<const float> from =
        all ? std::span<const float>(state.params) : std::span<const float>(state.params).subspan(at, n);
    float* to = all ? params.data() : params.data() + begin;
    // Sharded parameters may have nothing mapped yet (nn::ModelInit::kNone).
    if (absl::Status s =
            model_->CommitParams(to - params.data(), to - params.data() + static_cast<int64_t>(from.size()));
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CudaStatus(cudaMemcpyAsync(to, from.data(), from.size_bytes(), cudaMemcpyHostToDevice, stream_.get()),
                       "copying checkpointed parameters to the GPU");
        !s.ok()) {
      return s;
    }
    if (!all && !params_sharded()) {
      if (absl::Status s = comm_->AllGatherBlocks(params, shards_->bounds())->Wait(); !s.ok()) return s;
    }
    return model_->Synchronize();
  }

  std::string Describe() const override { return description_; }

  MemoryFootprint Memory() const override {
    const int64_t n = model_->layout().total_numel();
    // fp32 master weights, plus the bf16 copy the kernels read in bf16; fp32 gradients (the
    // chunks mapped when a rank keeps its shard of them), plus the bf16 scratch backward writes
    // in bf16; and the moments (this rank's shard of them when sharded).
    // Sharded parameters: the shard and the most this rank held gathered at once.
    const int64_t shard = adamw_->end() - adamw_->begin();
    const int64_t params = params_sharded() ? (shard + gather_->peak_gathered()) * 4 : n * 4;
    const int64_t grads = shards_->grads_sharded() ? model_->ResidentGradBytes() : n * 4;
    return {params + (bf16_ ? n * 2 : 0), grads + (bf16_ ? n * 2 : 0), 2 * shard * 4};
  }

 private:
  absl::Status Use() const { return CudaStatus(cudaSetDevice(gpu_), "cudaSetDevice"); }

  // The clip factor from gradients reduced onto their owners: this rank's shard's sum of
  // squares, summed across the ranks in place, then the norm and factor from that sum.
  absl::Status ClipByShards(double max_norm) {
    const int64_t begin = adamw_->begin(), n = adamw_->end() - begin;
    if (absl::Status s = clip_->ComputeSquared(model_->grads().subspan(begin, n)); !s.ok()) return s;
    if (absl::Status s = comm_->AllReduce(std::span<float>(clip_->norm_sq(), 1), comm::ReduceOp::kSum)->Wait();
        !s.ok()) {
      return s;
    }
    return clip_->Finish(max_norm);
  }

  // Copies a device span to the host once the stream's queued work (the step that wrote it) is done.
  absl::Status ToHost(std::span<const float> device, std::vector<float>& host) const {
    if (absl::Status s = Use(); !s.ok()) return s;
    if (absl::Status s = CudaStatus(
            cudaMemcpyAsync(host.data(), device.data(), device.size_bytes(), cudaMemcpyDeviceToHost, stream_.get()),
            "copying GPU state to the host");
        !s.ok()) {
      return s;
    }
    return model_->Synchronize();
  }

  // Destroyed in reverse order: the optimizer, the communicators (the staging wrapper before the
  // Gloo communicator under it), the model, and last the stream they all queue on.
  int gpu_ = 0;
  Stream stream_;
  std::unique_ptr<nn::cuda::CudaModel> model_;
  std::unique_ptr<comm::Communicator> host_comm_;
  std::unique_ptr<comm::Communicator> comm_;
  std::unique_ptr<nn::cuda::CudaGradClip> clip_;
  std::unique_ptr<nn::cuda::CudaAdamW> adamw_;
  std::string description_;
  bool bf16_ = false;
  // ddp.sharding: what this rank keeps of each state (set once the model's size is known).
  std::optional<ddp::ShardPlan> shards_;
  // ddp.sharding "full": the model's gate (declared last: destroyed first, see the destructor).
  std::unique_ptr<ddp::ParamGather> gather_;
};

absl::StatusOr<std::unique_ptr<Replica>> CudaReplica::Create(const TrainConfig& c, const ReplicaOptions& options) {
  if (options.device.kind() != v1::Device::CUDA) {
    return absl::FailedPreconditionError(
        absl::StrCat("placement: rank ", c.rank, " is placed on a GPU and this worker registered ",
                     options.device.description().empty() ? "without one" : options.device.description()));
  }
  auto r = std::make_unique<CudaReplica>();
  r->gpu_ = options.device.gpu_index();
  if (absl::Status s = r->Use(); !s.ok()) return s;
  if (absl::Status s = r->stream_.Create(); !s.ok()) return s;

  nn::cuda::CudaModelOptions mo;
  mo.device = r->gpu_;
  mo.stream = r->stream_.get();
  mo.precision =
      c.placement.precision == spec::Precision::kFp32 ? nn::cuda::Precision::kFp32 : nn::cuda::Precision::kBf16;
  r->bf16_ = mo.precision == nn::cuda::Precision::kBf16;
  // Sharded parameters are initialised per shard later (Replica::InitParams).
  mo.init = c.plan.sharding == spec::Sharding::kFull ? nn::ModelInit::kNone : nn::ModelInit::kFromSeed;
  auto model = nn::cuda::CreateCudaModel(c.plan.model, mo);
  if (!model.ok()) return model.status();
  r->model_ = *std::move(model);
  auto clip = nn::cuda::CudaGradClip::Create(r->stream_.get());
  if (!clip.ok()) return clip.status();
  r->clip_ = *std::move(clip);
  r->shards_.emplace(c.plan.sharding, r->model_->layout().total_numel(), c.rank, c.world_size);
  const auto [opt_begin, opt_end] = r->shards_->optimizer_range();
  auto adamw = nn::cuda::CudaAdamW::Create(r->model_->layout(), c.adamw, r->stream_.get(), opt_begin, opt_end);
  if (!adamw.ok()) return adamw.status();
  r->adamw_ = *std::move(adamw);

  if (c.placement.backend == spec::Backend::kNccl) {
    comm::NcclOptions no;
    no.device = r->gpu_;
    no.compute_stream = r->stream_.get();
    no.timeout = c.comm_timeout;
    auto comm = comm::ConnectNccl(options.kv, c.rank, c.world_size, no);
    if (!comm.ok()) return comm.status();
    r->comm_ = *std::move(comm);
  } else {
    auto host = comm::ConnectGloo(options.kv, c.rank, c.world_size, GlooOptionsOf(c, options));
    if (!host.ok()) return host.status();
    r->host_comm_ = *std::move(host);
    r->comm_ = comm::StageThroughHost(r->host_comm_.get(), r->gpu_, r->stream_.get());
  }
  if (r->params_sharded()) {
    r->gather_ = std::make_unique<ddp::ParamGather>(r->model_.get(), r->comm_.get(), r->shards_->bounds());
    r->model_->set_param_gate(r->gather_.get());
  }
  r->description_ = absl::StrCat(options.device.description(), ", ", spec::Name(c.placement.precision), ", ",
                                 r->comm_->backend(), r->shards_->DescribeSuffix());
  return r;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Replica>> CreateCudaReplica(const TrainConfig& c, const ReplicaOptions& options) {
  return CudaReplica::Create(c, options);
}

}  // namespace internal
}  // namespace gradsync::train
