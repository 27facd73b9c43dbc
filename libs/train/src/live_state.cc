#include "gradsync/train/live_state.h"

#include <memory>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gradsync/comm/communicator.h"

namespace gradsync::train {
namespace {

// The header the source sends first, as doubles added to the zeros of every other rank (exact:
// x + 0 is x). Step counts and sizes stay below 2^53, where doubles hold integers exactly.
enum Header { kHolds, kStep, kEpoch, kCursor, kInitialLoss, kAdamStep, kNumel, kHeaderSize };

}  // namespace

absl::Status CanHoldLive(const TrainConfig& config, const Replica& replica) {
  if (config.plan.sharding != spec::Sharding::kNone) {
    return absl::FailedPreconditionError(
        "ddp.sharding: a sharded state is not whole on any rank; a lost rank's shard goes with it");
  }
  if (!config.reducer.ignore_params.empty()) {
    return absl::FailedPreconditionError("ddp.ignoreParams: rank-local parameters are each rank's own");
  }
  if (!replica.HostMemory()) {
    return absl::FailedPreconditionError(
        absl::StrCat("placement: ", replica.Describe(), " exchanges device memory; live recovery runs on CPU replicas"));
  }
  return absl::OkStatus();
}

absl::StatusOr<HeldState> HoldState(const TrainConfig& config, Replica& replica, const TrainPosition& at) {
  if (absl::Status s = CanHoldLive(config, replica); !s.ok()) return s;
  HeldState held;
  held.job_id = config.job_id;
  held.generation = config.generation;
  held.at = at;
  held.state.model = config.model_spec;
  held.state.layout = replica.model().layout();
  if (absl::Status s = replica.SaveState(0, replica.model().layout().total_numel(), &held.state); !s.ok()) return s;
  return held;
}

absl::StatusOr<TrainPosition> ReceiveLiveState(const TrainConfig& config, const LiveSource& source,
                                               const HeldState* held, Replica& replica) {
  if (absl::Status s = CanHoldLive(config, replica); !s.ok()) return s;
  comm::Communicator& comm = replica.comm();
  const int64_t numel = replica.model().layout().total_numel();
  const bool root = config.rank == source.source_rank;
  // Every rank takes part in the header whatever it holds, so a source without the state fails
  // every rank alike instead of leaving them waiting in the broadcast.
  std::vector<double> header(kHeaderSize, 0.0);
  const bool holds = root && held != nullptr && held->job_id == config.job_id && held->at.step == source.step &&
                     held->state.whole() && held->state.adam_m.size() == held->state.params.size();
  if (holds) {
    header[kHolds] = 1;
    header[kStep] = static_cast<double>(held->at.step);
    header[kEpoch] = held->at.data.epoch;
    header[kCursor] = static_cast<double>(held->at.data.cursor);
    header[kInitialLoss] = held->at.initial_loss;
    header[kAdamStep] = static_cast<double>(held->state.adam_step);
    header[kNumel] = static_cast<double>(held->state.params.size());
  }
  if (absl::Status s = comm.AllReduceSum(std::span<double>(header)); !s.ok()) return s;
  if (header[kHolds] != 1) {
    return absl::UnavailableError(absl::StrFormat("live recovery: rank %d holds no state of job %s at step %d",
                                                  source.source_rank, config.job_id, source.step));
  }
  if (header[kNumel] != static_cast<double>(numel)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "live recovery: rank %d holds %.0f parameters and this model has %d", source.source_rank, header[kNumel], numel));
  }
  ckpt::RankState state;
  if (root) {
    state = held->state;
  } else {
    state.params.resize(static_cast<size_t>(numel));
    state.adam_m.resize(static_cast<size_t>(numel));
    state.adam_v.resize(static_cast<size_t>(numel));
  }
  state.shard_begin = 0;
  state.adam_step = static_cast<int64_t>(header[kAdamStep]);
  std::vector<std::shared_ptr<comm::Work>> sent;
  for (std::vector<float>* v : {&state.params, &state.adam_m, &state.adam_v}) {
    sent.push_back(comm.Broadcast(std::span<float>(*v), source.source_rank));
  }
  // Every broadcast is waited for before the buffers go, the first error kept.
  absl::Status received;
  for (const std::shared_ptr<comm::Work>& w : sent) received.Update(w->Wait());
  if (!received.ok()) return received;
  if (absl::Status s = replica.LoadState(state); !s.ok()) return s;
  TrainPosition at;
  at.step = static_cast<int64_t>(header[kStep]);
  at.data = ddp::Position{static_cast<int>(header[kEpoch]), static_cast<int64_t>(header[kCursor])};
  at.initial_loss = header[kInitialLoss];
  return at;
}

}  // namespace gradsync::train
