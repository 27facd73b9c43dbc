// The registered workers. A WorkerLease lives from a worker's registration until its lease
// expires: the worker's description, when it was last heard from, and the rank it holds while
// assigned. WorkerPool keeps the leases in registration order, the order gangs are formed in.
// Neither is thread-safe: the coordinator owns the pool under its lock.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "gradsync/spec/placement.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::coordinator {

// SHA-256 of a session, lowercase hex: what the store keeps of a session (GenerationRecord), so
// that a worker can prove after a coordinator restart that it held a rank, while the database
// never holds a credential.
std::string SessionDigest(absl::string_view session);

class WorkerLease {
 public:
  // Issues the lease a fresh session credential.
  WorkerLease(std::string id, v1::RegisterWorkerRequest info, absl::Time now);

  const std::string& id() const { return id_; }
  // The credential the worker presents on every call after registering: "<id>.<random hex>".
  const std::string& session() const { return session_; }
  // Whether `presented` is this lease's session, compared in constant time.
  bool SessionMatches(absl::string_view presented) const;
  // SessionDigest(session()).
  const std::string& session_digest() const { return session_digest_; }
  // The worker id a session names (the part before its last '.'); empty when it names none.
  static absl::string_view WorkerIdOfSession(absl::string_view session);
  const v1::RegisterWorkerRequest& info() const { return info_; }
  spec::RankHost host() const { return {id_, info_.hostname(), info_.device()}; }

  // A heartbeat at `now` extends the lease.
  void Renew(absl::Time now) { last_seen_ = now; }
  absl::Time last_seen() const { return last_seen_; }
  absl::Time registered_at() const { return registered_at_; }
  bool ExpiredAt(absl::Time now, absl::Duration timeout) const { return now - last_seen_ > timeout; }
  absl::Duration SilentFor(absl::Time now) const { return now - last_seen_; }

  // --- The rank the worker holds: valid while !idle(). ---
  bool idle() const { return !assigned_; }
  const std::string& job_id() const { return job_id_; }
  int generation() const { return generation_; }
  int rank() const { return rank_; }
  // Whether the worker holds a rank in `generation` of job `job_id`.
  bool Holds(const std::string& job_id, int generation) const {
    return assigned_ && job_id_ == job_id && generation_ == generation;
  }

  // Gives the worker the rank of `a` and queues `a` for NextAssignment.
  void Assign(v1::Assignment a);
  // Gives the worker `rank` of `generation` of job `job_id`, which it runs already (a generation
  // adopted after a coordinator restart): nothing is queued for NextAssignment.
  void Adopt(const std::string& job_id, int generation, int rank);
  // Generation `generation` of job `job_id` ended for `reason`. A worker that never took its
  // assignment is free at once; one that runs it is told to abort on its next heartbeat. No-op
  // for a worker that holds no rank in that generation.
  void LeaveGeneration(const std::string& job_id, int generation, const std::string& reason);
  // Back to the idle pool.
  void Free();
  // Why the worker's generation ended, for the abort on its next heartbeat; empty if unknown.
  const std::string& abort_reason() const { return abort_reason_; }

  bool has_assignment() const { return !inbox_.empty(); }
  // The oldest assignment not yet taken; nullopt when none.
  std::optional<v1::Assignment> TakeAssignment();

 private:
  std::string id_;
  std::string session_;
  std::string session_digest_;
  v1::RegisterWorkerRequest info_;
  absl::Time registered_at_;
  absl::Time last_seen_;
  bool assigned_ = false;
  std::string job_id_;
  int generation_ = 0;
  int rank_ = -1;
  std::deque<v1::Assignment> inbox_;
  std::string abort_reason_;
};

class WorkerPool {
 public:
  // Registers a worker under `id`, which must be new, after every worker registered before.
  WorkerLease& Add(const std::string& id, const v1::RegisterWorkerRequest& info, absl::Time now);
  // nullptr for an unknown id.
  WorkerLease* Find(const std::string& id);
  const WorkerLease* Find(const std::string& id) const;
  // The worker whose session `session` is; nullptr when it is no registered worker's.
  const WorkerLease* FindBySession(absl::string_view session) const;
  bool Contains(const std::string& id) const { return leases_.count(id) > 0; }
  void Remove(const std::string& id);
  size_t size() const { return leases_.size(); }

  // Every worker in registration order (pointers stay valid until the worker is removed).
  std::vector<const WorkerLease*> InOrder() const;
  // Idle workers in registration order (pointers stay valid until the worker is removed).
  std::vector<WorkerLease*> Idle();
  size_t CountIdle() const;
  // Ids of workers silent for longer than `timeout` at `now`, in id order.
  std::vector<std::string> Expired(absl::Time now, absl::Duration timeout) const;
  // Workers that hold a rank of job `job_id` outside its running generation `running` (0 when
  // none runs): told to abort and not back yet.
  int Returning(const std::string& job_id, int running) const;

 private:
  std::map<std::string, WorkerLease> leases_;
  std::vector<std::string> order_;
};

}  // namespace gradsync::coordinator
