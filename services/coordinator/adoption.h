// A generation that outlived its coordinator. Workers train on while the coordinator is away (they
// need it only for reports, heartbeats and each epoch's plan), so a coordinator started on the same
// database keeps a generation it finds RUNNING with a stored GenerationRecord, and takes its ranks
// back one by one as their workers register again with the rank they run (RegisterWorkerRequest
// .running). A claim proves itself with the session the worker held: the record keeps its SHA-256,
// and a rank goes back only to the worker id, host and session that held it, once. The generation
// is adopted when every rank is back; if some are not back by the deadline, the coordinator
// restarts it from its last checkpoint, as it did for every running job before adoption existed.
// Not thread-safe: the coordinator owns it (through its Generation) under its lock.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::coordinator {

class Adoption {
 public:
  // The generation of job `job_id` that `record` describes, kept at `since` (the coordinator's
  // start) until `deadline`.
  Adoption(std::string job_id, v1::GenerationRecord record, absl::Time since, absl::Time deadline);

  absl::Time since() const { return since_; }
  absl::Time deadline() const { return deadline_; }
  // The worker that held `rank` when the record was stored; rank must be within the world size.
  const v1::RankHolder& holder(int rank) const { return record_.ranks(rank); }

  // OK when rank `claim.rank()` may go back to the worker claiming it from `hostname` with
  // `session_digest` (SessionDigest of the session it presented; empty when it presented none).
  // The caller has checked that the claim is for this generation. Errors name the field:
  //   INVALID_ARGUMENT: a rank outside the world size, or another world size;
  //   UNAUTHENTICATED: no session presented;
  //   PERMISSION_DENIED: another worker id, host or session than the rank's holder;
  //   FAILED_PRECONDITION: the rank is back already.
  absl::Status CheckClaim(const v1::RunningRank& claim, const std::string& hostname,
                          const std::string& session_digest) const;
  // Records that `rank` is back (after CheckClaim).
  void TakeBack(int rank) { back_[static_cast<size_t>(rank)] = true; }
  // Every rank is back.
  bool complete() const;
  // Ranks not back yet, in order.
  std::vector<int> Missing() const;

 private:
  std::string job_id_;
  v1::GenerationRecord record_;
  absl::Time since_;
  absl::Time deadline_;
  std::vector<bool> back_;
};

}  // namespace gradsync::coordinator
