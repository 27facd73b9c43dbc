#include "stall_watch.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gradsync::coordinator {

std::optional<std::string> StallWatch::Record(const v1::HeartbeatRequest& beat, absl::Time now) {
  auto [it, fresh] = beats_.try_emplace(beat.rank(), beat);
  const v1::HeartbeatRequest& before = it->second;
  const bool moved = fresh || beat.collective_done() != before.collective_done() || beat.step() != before.step();
  if (!fresh && beat.rank() == 0 && beat.step() > before.step()) {
    if (last_step_change_ != absl::Time()) {
      step_time_ = (now - last_step_change_) / static_cast<double>(beat.step() - before.step());
    }
    last_step_change_ = now;
  }
  it->second = beat;
  if (!moved) return std::nullopt;
  last_progress_ = now;
  if (!stalled_) return std::nullopt;
  stalled_ = false;
  return absl::StrFormat("rank %d makes progress again (%s)", beat.rank(), beat.activity());
}

bool StallWatch::CheckStalled(absl::Time now, absl::Duration timeout) {
  if (stalled_ || beats_.size() < world_size_ || last_progress_ == absl::Time()) return false;
  // Before the first collective, ranks load data and meet in the store: nothing to compare yet.
  const bool communicating =
      std::any_of(beats_.begin(), beats_.end(), [](const auto& b) { return b.second.collective_seq() > 0; });
  if (!communicating) return false;
  const absl::Duration limit = std::max(timeout, 3 * step_time_);
  if (now - last_progress_ < limit) return false;
  stalled_ = true;
  return true;
}

std::string StallWatch::Describe(absl::Time now, const std::vector<std::string>& rank_names) const {
  return absl::StrCat("no progress for ", absl::FormatDuration(absl::Trunc(now - last_progress_, absl::Seconds(1))),
                      ": ", Diagnose(rank_names));
}

std::string StallWatch::Diagnose(const std::vector<std::string>& rank_names) const {
  int64_t least = INT64_MAX;
  for (const auto& [rank, b] : beats_) least = std::min(least, b.collective_seq());
  std::vector<int> behind, ahead;
  for (const auto& [rank, b] : beats_) (b.collective_seq() == least ? behind : ahead).push_back(rank);
  if (!ahead.empty()) {
    std::vector<std::string> names;
    for (int r : behind) names.push_back(rank_names[static_cast<size_t>(r)]);
    const v1::HeartbeatRequest& waiting = beats_.at(ahead.front());
    const v1::HeartbeatRequest& slow = beats_.at(behind.front());
    return absl::StrFormat("%s %s behind, at step %d, %s (collective #%d not issued); rank%s %s wait%s: %s",
                           absl::StrJoin(names, ", "), behind.size() == 1 ? "is" : "are", slow.step() + 1,
                           slow.activity(), least, ahead.size() == 1 ? "" : "s", absl::StrJoin(ahead, ", "),
                           ahead.size() == 1 ? "s" : "", waiting.activity());
  }
  const v1::HeartbeatRequest& any = beats_.begin()->second;
  if (any.collective_seq() > any.collective_done()) {
    return absl::StrFormat(
        "every rank waits in the same collective (%s): the transport between them makes no "
        "progress",
        any.activity());
  }
  std::vector<std::string> doing;
  for (const auto& [rank, b] : beats_) doing.push_back(absl::StrCat("rank ", rank, ": ", b.activity()));
  return absl::StrCat("no rank is in a collective; ", absl::StrJoin(doing, "; "));
}

}  // namespace gradsync::coordinator
