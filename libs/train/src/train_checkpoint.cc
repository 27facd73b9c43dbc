#include "gradsync/train/train_checkpoint.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/comm/communicator.h"

namespace gradsync::train {

absl::StatusOr<v1::ReportCheckpointRequest> WriteCheckpoint(const TrainConfig& c, Replica& replica,
                                                            const TrainPosition& at) {
  const absl::Time boundary = absl::Now();
  ckpt::RankState state;
  state.model = c.model_spec;
  state.layout = replica.model().layout();
  // This rank's shard of one copy of the state, which the ranks write between them; with
  // rank-local parameters (ddp.ignoreParams) the whole of its own.
  const int64_t total = state.layout.total_numel();
  const auto [begin, end] = c.reducer.ignore_params.empty() ? comm::BlockRange(total, c.world_size, c.rank)
                                                            : std::pair<int64_t, int64_t>(0, total);
  if (absl::Status s = replica.SaveState(begin, end, &state); !s.ok()) return s;
  state.step = at.step;
  state.epoch = at.data.epoch;
  state.cursor = at.data.cursor;
  state.rank = c.rank;
  state.world_size = c.world_size;
  state.seed = c.seed;
  state.job_id = c.job_id;
  state.generation = c.generation;
  const std::string dir = ckpt::CheckpointDir(c.checkpoint_root, at.step);
  auto part = ckpt::WriteRankPart(dir, state);
  if (!part.ok()) return part.status();
  v1::ReportCheckpointRequest r;
  r.set_job_id(c.job_id);
  r.set_generation(c.generation);
  r.set_rank(c.rank);
  r.set_step(at.step);
  r.set_epoch(at.data.epoch);
  r.set_cursor(at.data.cursor);
  r.set_dir(dir);
  r.set_initial_loss(at.initial_loss);
  *r.mutable_part() = *part;
  *r.mutable_boundary_time() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(boundary));
  return r;
}

absl::StatusOr<TrainPosition> RestoreCheckpoint(const v1::CheckpointManifest& m, int rank, Replica& replica) {
  const nn::Model& model = replica.model();
  // The range of the state this rank keeps, from every part that holds some of it: any world
  // size resumes from any other's checkpoint, and this rank's own values win where parts overlap
  // (its rank-local parameters). A sharded rank never reads more than its range and one part.
  const auto [begin, end] = replica.StateRange();
  auto state = ckpt::ReadCheckpointRange(m, rank, begin, end);
  if (!state.ok()) return state.status();
  if (state->layout.total_numel() != model.layout().total_numel() || state->layout.Hash() != model.layout().Hash()) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", m.dir(), " holds another model (",
                                                      state->layout.total_numel(), " parameters, this model has ",
                                                      model.layout().total_numel(), ")"));
  }
  if (absl::Status s = replica.LoadState(*state); !s.ok()) return s;
  TrainPosition at;
  at.step = m.step();
  at.data = ddp::Position{m.epoch(), m.cursor()};
  at.initial_loss = m.initial_loss();
  return at;
}

}  // namespace gradsync::train
