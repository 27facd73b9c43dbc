// Reading Prometheus exposition text in tests: one sample's value, and promtool's verdict.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace gradsync::metrics::testing {

// The value of the sample whose name and labels are exactly `series`, e.g.
// `gradsync_train_loss{training_job="j"}`; nullopt when the text has no such line.
std::optional<double> SampleValue(const std::string& text, const std::string& series);

// Runs `promtool check metrics` on `text`. OK when it passes; FAILED_PRECONDITION when promtool
// cannot be had (GRADSYNC_PROMTOOL unset and tests/metrics/fetch_prometheus.sh failed), with the
// reason; INVALID_ARGUMENT with promtool's output when the text fails the check.
absl::Status PromtoolCheck(const std::string& text);

}  // namespace gradsync::metrics::testing
