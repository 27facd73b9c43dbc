// What the coordinator does with the ranks' heartbeats: each running generation's StallWatch
// (stall_watch.h) hears them, rank 0's progress goes into the job, and a stall or its end
// becomes an event.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "coordinator.h"

namespace gradsync::coordinator {
namespace {

// "rank 1 (worker W on host)" for each rank of `gen`, as stall messages name them.
std::vector<std::string> RankNames(const Generation& gen, const WorkerPool& workers) {
  std::vector<std::string> names;
  for (size_t r = 0; r < gen.ranks().size(); ++r) {
    const std::string& wid = gen.ranks()[r];
    const WorkerLease* w = workers.Find(wid);
    names.push_back(absl::StrFormat("rank %d (worker %s on %s)", r, wid, w == nullptr ? "?" : w->info().hostname()));
  }
  return names;
}

}  // namespace

void Coordinator::RecordBeatLocked(JobRuntime* rt, const WorkerLease& w, const v1::HeartbeatRequest& request) {
  v1::HeartbeatRequest beat = request;
  beat.set_rank(w.rank());
  beat.clear_progress();
  if (std::optional<std::string> cleared = rt->generation()->stalls().Record(beat, options_.clock())) {
    AddEventLocked(rt, "StallCleared", *cleared);
    TouchLocked(rt);
  }
  if (std::optional<std::string> recovered = rt->recovery().Stepped(request.step(), options_.clock())) {
    rt->StoreRecoveryStats();
    AddEventLocked(rt, "Recovered", *recovered);
    TouchLocked(rt);
  }
  if (request.has_progress() && w.rank() == 0) {
    rt->SetProgress(request.progress());
    // Written once this heartbeat releases the lock (StateLock), not under it.
    TouchLocked(rt);
  }
}

void Coordinator::CheckStallsLocked() {
  const absl::Time now = options_.clock();
  for (auto& [id, rt] : jobs_) {
    Generation* gen = rt.generation();
    if (gen == nullptr || rt.state() != v1::RUNNING || !gen->stalls().CheckStalled(now, options_.stall_timeout)) {
      continue;
    }
    rt.CountStall();
    AddEventLocked(&rt, "Stalled", gen->stalls().Describe(now, RankNames(*gen, workers_)));
    TouchLocked(&rt);
  }
}

}  // namespace gradsync::coordinator
