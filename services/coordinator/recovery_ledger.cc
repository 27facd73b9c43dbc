#include "recovery_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gradsync::coordinator {
namespace {

// The workers of `a` that are not in `b`, with their rank in `a`: "w-3 (rank 3)".
std::vector<std::string> Missing(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (size_t r = 0; r < a.size(); ++r) {
    if (std::find(b.begin(), b.end(), a[r]) == b.end()) out.push_back(absl::StrFormat("%s (rank %d)", a[r], r));
  }
  return out;
}

std::string Listed(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : absl::StrJoin(names, ", ");
}

}  // namespace

void RecoveryLedger::Reached(int64_t step) { furthest_ = std::max(furthest_, step); }

void RecoveryLedger::Failed(std::vector<std::string> ranks, absl::Time now) {
  // A second failure before the next generation started (a survivor lost while the job waited)
  // is part of the same recovery: it began at the first.
  if (!failure_.has_value()) failure_ = Failure{now, std::move(ranks)};
  // A recovery whose generation failed before its first step goes on as the same recovery too.
  if (recovering_.has_value()) {
    failure_->at = std::min(failure_->at, recovering_->failed_at);
    recovering_.reset();
  }
}

void RecoveryLedger::Held(const std::string& worker_id, const v1::HeldState& held) {
  held_[worker_id] = held;
  Reached(held.step());
}

std::optional<v1::LiveResume> RecoveryLedger::Source(const std::vector<std::string>& gang) const {
  std::optional<v1::LiveResume> best;
  for (size_t r = 0; r < gang.size(); ++r) {
    const auto it = held_.find(gang[r]);
    if (it == held_.end() || (best.has_value() && it->second.step() <= best->step())) continue;
    best.emplace();
    best->set_source_rank(static_cast<int>(r));
    best->set_step(it->second.step());
  }
  return best;
}

std::optional<std::string> RecoveryLedger::Started(const std::vector<std::string>& gang,
                                                   const std::optional<v1::LiveResume>& live, int64_t resumed,
                                                   absl::Time now) {
  held_.clear();
  const int64_t furthest = furthest_;
  furthest_ = resumed;
  if (!failure_.has_value()) return std::nullopt;
  const Failure failure = *std::move(failure_);
  failure_.reset();
  stats_.set_steps_lost(stats_.steps_lost() + std::max<int64_t>(0, furthest - resumed));
  recovering_ = Recovering{failure.at, resumed, live.has_value()};
  if (!live.has_value()) {
    stats_.set_checkpoint_recoveries(stats_.checkpoint_recoveries() + 1);
    return std::nullopt;
  }
  stats_.set_live_recoveries(stats_.live_recoveries() + 1);
  return absl::StrFormat(
      "%d ranks (was %d); left: %s; joined: %s; resuming live at step %d from rank %d's memory, step %d retrained, "
      "no checkpoint read; the new quorum formed %.2fs after the failure",
      gang.size(), failure.ranks.size(), Listed(Missing(failure.ranks, gang)), Listed(Missing(gang, failure.ranks)),
      resumed, live->source_rank(), resumed + 1, absl::ToDoubleSeconds(now - failure.at));
}

std::optional<std::string> RecoveryLedger::Stepped(int64_t step, absl::Time now) {
  Reached(step);
  if (!recovering_.has_value() || step <= recovering_->resumed) return std::nullopt;
  const Recovering done = *recovering_;
  recovering_.reset();
  const double seconds = absl::ToDoubleSeconds(now - done.failed_at);
  stats_.set_recovery_seconds(stats_.recovery_seconds() + seconds);
  stats_.set_last_recovery_seconds(seconds);
  return absl::StrFormat("step %d committed %.2fs after the failure (resumed %s at step %d)", step, seconds,
                         done.live ? "live" : done.resumed > 0 ? "from its checkpoint" : "from the start",
                         done.resumed);
}

}  // namespace gradsync::coordinator
