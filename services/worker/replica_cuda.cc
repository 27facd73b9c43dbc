// The GPU replica: the CUDA model of libs/nn/cuda in the placement's precision, clipping and
// AdamW on the device, and NCCL (or Gloo staged through pinned host memory) ordered after the
// model's stream. Built only with CUDA; replica_no_cuda.cc stands in otherwise.
//
// ddp.sharding "optimizer" (ZeRO-1, as llm.c does it): rank r keeps AdamW's moments for elements
// [bounds_[r], bounds_[r+1]) of the flat parameters alone, updates them alone, and the updated
// shards are all-gathered (AllGatherBlocks: one broadcast per block on NCCL and staged Gloo). The
// gradients are all-reduced whole, so the clip's norm covers all of them on every rank.
#include <cuda_runtime_api.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/nccl.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/nn/cuda/cuda_model.h"
#include "gradsync/nn/cuda/cuda_optimizer.h"
#include "replica.h"

namespace gradsync::worker {
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

  nn::Model& model() override { return *model_; }
  comm::Communicator& comm() override { return *comm_; }

  absl::StatusOr<double> Step(double lr, double max_norm) override {
    if (absl::Status s = Use(); !s.ok()) return s;
    if (absl::Status s = clip_->Compute(model_->grads(), max_norm); !s.ok()) return s;
    if (absl::Status s = adamw_->Step(model_->params(), model_->grads(), lr, clip_->scale()); !s.ok()) return s;
    if (sharded_) {
      if (absl::Status s = comm_->AllGatherBlocks(model_->params(), bounds_)->Wait(); !s.ok()) return s;
    }
    return clip_->ReadNorm();
  }

  absl::Status SetClipScope(std::vector<int>) override {
    return absl::FailedPreconditionError(
        "ddp.ignoreParams with training.gradClip: the GPU clips by the norm of every gradient, ignored ones "
        "included, so the ranks would clip by different factors and diverge; set training.gradClip to 0");
  }

  absl::StatusOr<std::vector<float>> HostParams() override {
    std::vector<float> host(model_->params().size());
    if (absl::Status s = ToHost(model_->params(), host); !s.ok()) return s;
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

  absl::Status LoadState(const ckpt::RankState& state) override {
    if (absl::Status s = Use(); !s.ok()) return s;
    const auto total = static_cast<size_t>(model_->layout().total_numel());
    if (state.adam_m.size() != total || state.adam_v.size() != total) {
      return absl::InvalidArgumentError(absl::StrCat("optimizer state of ", state.adam_m.size(), "/",
                                                     state.adam_v.size(), " elements does not fit a model of ", total));
    }
    const auto begin = static_cast<size_t>(adamw_->begin()), n = static_cast<size_t>(adamw_->end()) - begin;
    // The moments first: Restore checks their sizes, so a refused state changes nothing.
    if (absl::Status s = adamw_->Restore(std::span<const float>(state.adam_m).subspan(begin, n),
                                         std::span<const float>(state.adam_v).subspan(begin, n), state.adam_step);
        !s.ok()) {
      return s;
    }
    const std::span<float> params = model_->params();
    if (absl::Status s = CudaStatus(cudaMemcpyAsync(params.data(), state.params.data(), params.size_bytes(),
                                                    cudaMemcpyHostToDevice, stream_.get()),
                                    "copying checkpointed parameters to the GPU");
        !s.ok()) {
      return s;
    }
    return model_->Synchronize();
  }

  std::string Describe() const override { return description_; }

  MemoryFootprint Memory() const override {
    const int64_t n = model_->layout().total_numel();
    // fp32 master weights, plus the bf16 copy the kernels read in bf16; fp32 gradients and moments
    // (this rank's shard of them when sharded).
    return {n * 4 + (bf16_ ? n * 2 : 0), n * 4, 2 * (adamw_->end() - adamw_->begin()) * 4};
  }

 private:
  absl::Status Use() const { return CudaStatus(cudaSetDevice(gpu_), "cudaSetDevice"); }

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
  // ddp.sharding "optimizer": the ranks' shards of the flat parameters (comm::EvenBounds).
  bool sharded_ = false;
  std::vector<int64_t> bounds_;
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
  auto model = nn::cuda::CreateCudaModel(c.spec, mo);
  if (!model.ok()) return model.status();
  r->model_ = *std::move(model);
  auto clip = nn::cuda::CudaGradClip::Create(r->stream_.get());
  if (!clip.ok()) return clip.status();
  r->clip_ = *std::move(clip);
  const int64_t total = r->model_->layout().total_numel();
  r->sharded_ = c.sharding == spec::Sharding::kOptimizer;
  r->bounds_ = comm::EvenBounds(total, c.world_size);
  auto adamw =
      nn::cuda::CudaAdamW::Create(r->model_->layout(), c.adamw, r->stream_.get(), r->sharded_ ? r->bounds_[c.rank] : 0,
                                  r->sharded_ ? r->bounds_[c.rank + 1] : total);
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
  r->description_ = absl::StrCat(options.device.description(), ", ", spec::Name(c.placement.precision), ", ",
                                 r->comm_->backend(), r->sharded_ ? ", sharding optimizer" : "");
  return r;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Replica>> CreateCudaReplica(const TrainConfig& c, const ReplicaOptions& options) {
  return CudaReplica::Create(c, options);
}

}  // namespace internal
}  // namespace gradsync::worker
