#include "gradsync/train/activity.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace gradsync::train {

std::string DescribeActivity(const StepMarker& at, int64_t issued, int64_t done) {
  const bool in_step = at.step > 0 && at.first_collective >= 0 && done >= at.first_collective;
  if (issued > done) {
    const std::string waiting = absl::StrFormat("waiting in collective #%d", done);
    if (!in_step) return at.step == 0 ? waiting + " (initial broadcast)" : waiting;
    const int64_t index = done - at.first_collective;
    if (index < at.buckets) {
      return absl::StrFormat("%s: all-reduce of gradient bucket %d of %d, step %d", waiting, index + 1, at.buckets,
                             at.step);
    }
    return absl::StrFormat("%s: loss all-reduce, step %d", waiting, at.step);
  }
  if (at.step == 0) return "starting";
  const int64_t launched = in_step ? std::clamp<int64_t>(issued - at.first_collective, 0, at.buckets) : 0;
  return absl::StrFormat("computing step %d: %d of %d gradient buckets launched", at.step, launched, at.buckets);
}

}  // namespace gradsync::train
