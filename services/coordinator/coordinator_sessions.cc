// Worker sessions: each registration gets a credential, and every later worker call is checked
// against the worker it names and the rank that worker holds. The cluster token only says "one
// of our workers"; the session says which one, so a worker (or whoever holds the cluster token)
// cannot report, checkpoint or rendezvous as a rank it does not run.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator.h"

namespace gradsync::coordinator {
namespace {

absl::Status NoSession() {
  return absl::UnauthenticatedError(
      "no worker session: call RegisterWorker and send its session_token as \"gradsync-worker-session\" metadata");
}

}  // namespace

absl::Status Coordinator::CheckWorkerSession(absl::string_view session, const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  const WorkerLease* w = workers_.Find(worker_id);
  if (w == nullptr) return absl::NotFoundError(absl::StrCat("unknown worker ", worker_id, ": register again"));
  if (session.empty()) return NoSession();
  if (!w->SessionMatches(session)) {
    return absl::UnauthenticatedError(absl::StrCat("the worker session presented is not that of worker ", worker_id));
  }
  return absl::OkStatus();
}

absl::Status Coordinator::CheckRendezvousAccess(absl::string_view session, const std::string& job_id, int generation) {
  absl::MutexLock lock(&mu_);
  if (jobs_.count(JobIdFromName(job_id)) == 0) return absl::OkStatus();
  if (session.empty()) return NoSession();
  const WorkerLease* w = workers_.FindBySession(session);
  if (w == nullptr) return absl::UnauthenticatedError("the worker session presented belongs to no registered worker");
  if (!w->Holds(JobIdFromName(job_id), generation)) {
    return absl::PermissionDeniedError(
        absl::StrFormat("worker %s holds no rank of job %s generation %d: its rendezvous is closed to it", w->id(),
                        job_id, generation));
  }
  return absl::OkStatus();
}

absl::Status Coordinator::CheckJobMember(absl::string_view session, const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (session.empty()) return NoSession();
  const WorkerLease* w = workers_.FindBySession(session);
  if (w == nullptr) return absl::UnauthenticatedError("the worker session presented belongs to no registered worker");
  if (w->idle() || w->job_id() != JobIdFromName(job_id)) {
    return absl::PermissionDeniedError(absl::StrFormat("worker %s holds no rank of job %s", w->id(), job_id));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::coordinator
