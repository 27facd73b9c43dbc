#include "generation.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/util/time_util.h"
#include "kv_store.h"

namespace gradsync::coordinator {

using google::protobuf::util::TimeUtil;

Generation::Generation(std::string job_id, int number, std::vector<std::string> ranks, absl::Time start)
    : job_id_(std::move(job_id)),
      number_(number),
      ranks_(std::move(ranks)),
      start_(start),
      stalls_(ranks_.size(), start) {}

std::string Generation::kv_namespace() const { return KvNamespaceOf(job_id_, number_); }

absl::Status Generation::CheckReporter(const std::string& worker_id, int rank) const {
  if (rank < 0 || rank >= world_size()) {
    return absl::PermissionDeniedError(
        absl::StrFormat("job %s generation %d has ranks 0 to %d; worker %s reported rank %d", job_id_, number_,
                        world_size() - 1, worker_id, rank));
  }
  if (ranks_[rank] != worker_id) {
    return absl::PermissionDeniedError(
        absl::StrFormat("worker %s does not run rank %d of job %s generation %d", worker_id, rank, job_id_, number_));
  }
  return absl::OkStatus();
}

std::optional<v1::CheckpointManifest> Generation::AddCheckpointPart(const v1::ReportCheckpointRequest& part,
                                                                    absl::Time now) {
  auto& parts = checkpoint_parts_[part.step()];
  parts[part.rank()] = part;
  if (static_cast<int>(parts.size()) < world_size()) return std::nullopt;

  v1::CheckpointManifest m;
  m.set_job_id(job_id_);
  m.set_generation(number_);
  m.set_step(part.step());
  m.set_world_size(world_size());
  m.set_dir(part.dir());
  absl::Time boundary = absl::InfiniteFuture();
  for (const auto& [rank, p] : parts) {
    *m.add_parts() = p.part();
    m.set_total_bytes(m.total_bytes() + p.part().bytes());
    if (p.has_boundary_time()) {
      boundary = std::min(boundary, absl::FromUnixNanos(TimeUtil::TimestampToNanoseconds(p.boundary_time())));
    }
    if (rank == 0) {
      m.set_epoch(p.epoch());
      m.set_cursor(p.cursor());
      m.set_initial_loss(p.initial_loss());
    }
  }
  *m.mutable_commit_time() = TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
  if (boundary != absl::InfiniteFuture()) m.set_duration_seconds(absl::ToDoubleSeconds(now - boundary));
  checkpoint_parts_.erase(checkpoint_parts_.begin(), checkpoint_parts_.upper_bound(part.step()));
  return m;
}

bool Generation::AddResult(const v1::ReportResultRequest& result) {
  results_[result.rank()] = result;
  return static_cast<int>(results_.size()) >= world_size();
}

absl::StatusOr<v1::JobResult> Generation::AgreedResult() const {
  const v1::ReportResultRequest& first = results_.at(0);
  for (const auto& [rank, r] : results_) {
    if (r.param_digest() != first.param_digest()) {
      return absl::FailedPreconditionError(absl::StrFormat("replica divergence: ranks 0 and %d differ (%s vs %s)", rank,
                                                           first.param_digest(), r.param_digest()));
    }
  }
  v1::JobResult agreed = first.result();
  agreed.set_param_digest(first.param_digest());
  // Rank 0's figures, but every rank's own memory (each reports its own), in rank order.
  agreed.clear_memory();
  for (const auto& [rank, r] : results_) {
    if (r.result().memory().empty()) continue;
    v1::RankMemory* m = agreed.add_memory();
    *m = r.result().memory(0);
    m->set_rank(rank);
  }
  return agreed;
}

}  // namespace gradsync::coordinator
