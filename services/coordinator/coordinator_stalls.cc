// Hang diagnosis. Every heartbeat of a running rank carries its last step, the collectives it
// issued and finished, and its activity in words. Collectives run in the same order on every
// rank, so when a generation stops making progress the counters tell the story: a rank that
// issued fewer collectives than the others is the one holding them up (still computing, or stuck
// before its next bucket), and the others' oldest pending collective names the bucket they wait
// in. When every rank waits in the same collective, the transport itself is stuck.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "coordinator.h"

namespace gradsync::coordinator {

void Coordinator::RecordBeatLocked(JobRuntime* rt, const v1::HeartbeatRequest& beat) {
  const absl::Time now = options_.clock();
  auto [it, fresh] = rt->beats.try_emplace(beat.rank(), beat);
  const v1::HeartbeatRequest& before = it->second;
  const bool moved = fresh || beat.collective_done() != before.collective_done() || beat.step() != before.step();
  if (!fresh && beat.rank() == 0 && beat.step() > before.step()) {
    if (rt->last_step_change != absl::Time()) {
      rt->step_time = (now - rt->last_step_change) / static_cast<double>(beat.step() - before.step());
    }
    rt->last_step_change = now;
  }
  it->second = beat;
  if (!moved) return;
  rt->last_progress = now;
  if (rt->stalled) {
    rt->stalled = false;
    AddEventLocked(rt, "StallCleared", absl::StrFormat("rank %d makes progress again (%s)", beat.rank(), beat.activity()));
    TouchLocked(rt);
  }
}

void Coordinator::CheckStallsLocked() {
  const absl::Time now = options_.clock();
  for (auto& [id, rt] : jobs_) {
    if (rt.job.state() != v1::RUNNING || !rt.generation_active || rt.stalled ||
        rt.beats.size() < rt.ranks.size() || rt.last_progress == absl::Time()) {
      continue;
    }
    // Before the first collective, ranks load data and meet in the store: nothing to compare yet.
    const bool communicating = std::any_of(rt.beats.begin(), rt.beats.end(),
                                           [](const auto& b) { return b.second.collective_seq() > 0; });
    if (!communicating) continue;
    const absl::Duration limit = std::max(options_.stall_timeout, 3 * rt.step_time);
    if (now - rt.last_progress < limit) continue;
    rt.stalled = true;
    AddEventLocked(&rt, "Stalled",
                   absl::StrCat("no progress for ", absl::FormatDuration(absl::Trunc(now - rt.last_progress, absl::Seconds(1))),
                                ": ", DiagnoseStallLocked(rt)));
    TouchLocked(&rt);
  }
}

std::string Coordinator::DiagnoseStallLocked(const JobRuntime& rt) const {
  auto who = [&](int rank) {
    const std::string& wid = rt.ranks[static_cast<size_t>(rank)];
    auto w = workers_.find(wid);
    return absl::StrFormat("rank %d (worker %s on %s)", rank, wid, w == workers_.end() ? "?" : w->second.info.hostname());
  };
  int64_t least = INT64_MAX, most = INT64_MIN;
  for (const auto& [rank, b] : rt.beats) {
    least = std::min(least, b.collective_seq());
    most = std::max(most, b.collective_seq());
  }
  std::vector<int> behind, ahead;
  for (const auto& [rank, b] : rt.beats) (b.collective_seq() == least ? behind : ahead).push_back(rank);
  if (!ahead.empty()) {
    std::vector<std::string> names;
    for (int r : behind) names.push_back(who(r));
    const v1::HeartbeatRequest& waiting = rt.beats.at(ahead.front());
    return absl::StrFormat("%s %s behind, at step %d, %s (collective #%d not issued); rank%s %s wait%s: %s",
                           absl::StrJoin(names, ", "), behind.size() == 1 ? "is" : "are",
                           rt.beats.at(behind.front()).step() + 1, rt.beats.at(behind.front()).activity(), least,
                           ahead.size() == 1 ? "" : "s", absl::StrJoin(ahead, ", "), ahead.size() == 1 ? "s" : "",
                           waiting.activity());
  }
  const v1::HeartbeatRequest& any = rt.beats.begin()->second;
  if (any.collective_seq() > any.collective_done()) {
    return absl::StrFormat("every rank waits in the same collective (%s): the transport between them makes no "
                           "progress",
                           any.activity());
  }
  std::vector<std::string> doing;
  for (const auto& [rank, b] : rt.beats) doing.push_back(absl::StrCat("rank ", rank, ": ", b.activity()));
  return absl::StrCat("no rank is in a collective; ", absl::StrJoin(doing, "; "));
}

}  // namespace gradsync::coordinator
