// One rank's replica: the network, its optimizer and the communicator that joins it to the
// generation's other ranks, on the CPU or on the worker's GPU as the coordinator placed it
// (TrainConfig.placement, from Assignment.placement). The training loop sees only this interface.
//
//   placement        model                     optimizer                 communicator
//   cpu, gloo        nn::CreateModel (host)    nn::AdamW, ClipGlobalNorm Gloo
//   cuda, nccl       nn::cuda::CudaModel       CudaGradClip + CudaAdamW  NCCL on the model's stream
//   cuda, gloo       nn::cuda::CudaModel       CudaGradClip + CudaAdamW  Gloo, staged through pinned
//                                                                        host buffers
//
// The model's params() and grads() live where the model computes; the reducer hands ranges of
// grads() to the communicator, which takes memory of that kind. What leaves the replica for
// checkpoints, the digest and the weights file is a host copy.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/ddp/shard_plan.h"
#include "gradsync/nn/model.h"
#include "gradsync/train/train_config.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::train {

// The bytes one rank holds for the model's training state, wherever it computes (host memory on
// the CPU, the GPU's on a GPU): what ddp.sharding divides.
struct MemoryFootprint {
  int64_t params = 0;     // the parameters, with a bf16 compute copy where there is one
  int64_t grads = 0;      // the gradient buffer backward writes
  int64_t optimizer = 0;  // AdamW's moments (this rank's shard of them when sharded)
  int64_t total() const { return params + grads + optimizer; }
};

class Replica {
 public:
  virtual ~Replica() = default;

  virtual nn::Model& model() = 0;
  virtual comm::Communicator& comm() = 0;

  // Clips the gradients to a global norm of max_norm (none when max_norm <= 0) and takes one
  // AdamW step at learning rate lr. Returns the norm before clipping.
  virtual absl::StatusOr<double> Step(double lr, double max_norm) = 0;
  // From now on the clipping norm covers the parameters `params` (layout indices) alone, the
  // scale still applying to every gradient: the synchronised parameters, so that every rank
  // clips by the same factor while the ignored ones (ddp.ignoreParams) hold each rank's own
  // gradients. FAILED_PRECONDITION where the replica cannot (the GPU's clip covers every one).
  virtual absl::Status SetClipScope(std::vector<int> params) = 0;

  // Fills the parameters from `seed` (nn::Model::InitParams). Where each rank keeps only its
  // shard of them (params_sharded()), one parameter at a time, never holding the whole model.
  virtual void InitParams(uint64_t seed) { model().InitParams(seed); }
  // ddp.sharding "full": each rank keeps only its shard of params(), the model gathering each
  // layer's parameters while it computes with them. No rank has them whole to broadcast.
  bool params_sharded() const { return shards().params_sharded(); }
  // How this generation divides the training state among its ranks, and this rank's shard.
  virtual const ddp::ShardPlan& shards() const = 0;
  // Zeroes the gradients before a step. Where a rank keeps only its shard of the reduced
  // gradients (ddp.sharding "gradients" and "full"), the buffer's pages go back to the system.
  virtual void ZeroGrads() { model().ZeroGrads(); }

  // A host copy of the whole parameters. With params_sharded() a collective: every rank calls it.
  virtual absl::StatusOr<std::vector<float>> HostParams() = 0;
  // Fills `state` with elements [begin, end) of the parameters and the optimizer state (host
  // copies), and its shard_begin. Sharded (ddp.sharding), the range must be this rank's shard:
  // INVALID_ARGUMENT otherwise.
  virtual absl::Status SaveState(int64_t begin, int64_t end, ckpt::RankState* state) = 0;
  // The elements [first, second) of the flat state LoadState needs: all of them with sharding
  // off, this rank's shard with it (ckpt::ReadCheckpointRange reads just those).
  virtual std::pair<int64_t, int64_t> StateRange() const = 0;
  // Loads parameters and optimizer state from `state` (its model the caller has checked), which
  // must cover StateRange(): INVALID_ARGUMENT otherwise, changing nothing. This rank keeps its
  // range of the moments. Where `state` holds only the range and the rank keeps the whole
  // parameters (ddp.sharding "optimizer", "gradients"), the rest of them are all-gathered from
  // the other ranks: a collective then, every rank loading its own range.
  virtual absl::Status LoadState(const ckpt::RankState& state) = 0;

  // Whether the model's buffers and the communicator take host memory (the CPU replica), so that
  // a host copy of the state can be broadcast as it is (live_state.h).
  virtual bool HostMemory() const { return false; }

  // Where and how it computes, e.g. "cpu, fp32, gloo" or "NVIDIA H100 (cuda:0), bf16, nccl".
  virtual std::string Describe() const = 0;
  // What it holds between steps (buffers' sizes, not the allocator's overheads); with
  // ddp.sharding "full", its parameters add the most it held gathered during a step.
  virtual MemoryFootprint Memory() const = 0;
};

// What the worker brings, apart from the assignment.
struct ReplicaOptions {
  // The worker's device, as it registered.
  v1::Device device;
  // The generation's key-value namespace, for the communicator's rendezvous.
  comm::KvClient* kv = nullptr;
  // The address Gloo binds and advertises to the other ranks.
  std::string comm_host = "127.0.0.1";
};

// Builds the replica `config.placement` asks for; rendezvous with the other ranks happens here.
// FAILED_PRECONDITION for a GPU placement on a build without CUDA or a worker without a GPU, or
// NCCL on the CPU; the communicator's and the model's errors otherwise.
absl::StatusOr<std::unique_ptr<Replica>> CreateReplica(const TrainConfig& config, const ReplicaOptions& options);

namespace internal {
// The two halves of CreateReplica: replica_cpu.cc and replica_cuda.cc (CUDA builds only).
absl::StatusOr<std::unique_ptr<Replica>> CreateCpuReplica(const TrainConfig& config, const ReplicaOptions& options);
absl::StatusOr<std::unique_ptr<Replica>> CreateCudaReplica(const TrainConfig& config, const ReplicaOptions& options);
// The Gloo options of `config` for this worker.
comm::GlooOptions GlooOptionsOf(const TrainConfig& config, const ReplicaOptions& options);
// INVALID_ARGUMENT unless `state` holds parameters and moments for elements [begin, begin + n)
// (Replica::LoadState).
absl::Status CoversRange(const ckpt::RankState& state, int64_t begin, int64_t n);
// Whether `state` holds all `total` parameters.
bool HoldsAll(const ckpt::RankState& state, size_t total);
}  // namespace internal

}  // namespace gradsync::train
