#include "adoption.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "auth.h"

namespace gradsync::coordinator {

Adoption::Adoption(std::string job_id, v1::GenerationRecord record, absl::Time since, absl::Time deadline)
    : job_id_(std::move(job_id)),
      record_(std::move(record)),
      since_(since),
      deadline_(deadline),
      back_(static_cast<size_t>(record_.ranks_size()), false) {}

absl::Status Adoption::CheckClaim(const v1::RunningRank& claim, const std::string& hostname,
                                  const std::string& session_digest) const {
  const int world = record_.ranks_size(), rank = claim.rank(), gen = record_.generation();
  if (rank < 0 || rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrFormat("running.rank: job %s generation %d has ranks 0 to %d, not %d", job_id_, gen, world - 1, rank));
  }
  if (claim.world_size() != world) {
    return absl::InvalidArgumentError(absl::StrFormat("running.worldSize: job %s generation %d has %d ranks, not %d",
                                                      job_id_, gen, world, claim.world_size()));
  }
  const v1::RankHolder& held = record_.ranks(rank);
  if (claim.worker_id() != held.worker_id()) {
    return absl::PermissionDeniedError(
        absl::StrFormat("running.workerId: rank %d of job %s generation %d ran on worker %s, not %s", rank, job_id_,
                        gen, held.worker_id(), claim.worker_id()));
  }
  if (hostname != held.hostname()) {
    return absl::PermissionDeniedError(
        absl::StrFormat("hostname: rank %d of job %s generation %d ran on host %s, not %s", rank, job_id_, gen,
                        held.hostname(), hostname));
  }
  if (session_digest.empty()) {
    return absl::UnauthenticatedError(
        "no worker session: a worker claiming the rank it runs sends the session it held as "
        "\"gradsync-worker-session\" metadata");
  }
  if (!ConstantTimeEquals(session_digest, held.session_sha256())) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the worker session presented is not the one worker %s held for rank %d of job %s generation %d",
        held.worker_id(), rank, job_id_, gen));
  }
  if (back_[rank]) {
    return absl::FailedPreconditionError(
        absl::StrFormat("running.rank: rank %d of job %s generation %d is back already (worker %s)", rank, job_id_, gen,
                        held.worker_id()));
  }
  return absl::OkStatus();
}

bool Adoption::complete() const {
  for (bool b : back_) {
    if (!b) return false;
  }
  return true;
}

std::vector<int> Adoption::Missing() const {
  std::vector<int> missing;
  for (size_t r = 0; r < back_.size(); ++r) {
    if (!back_[r]) missing.push_back(static_cast<int>(r));
  }
  return missing;
}

}  // namespace gradsync::coordinator
