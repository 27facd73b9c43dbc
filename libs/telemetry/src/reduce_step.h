// The arithmetic of one step: reports of the ranks that reported -> one ReducedStep.
#pragma once

#include <cstdint>
#include <map>

#include "gradsync/v1/metrics.pb.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::telemetry {

// `reports` maps rank -> that rank's report for the same (job, generation, step) and must not be
// empty. Ranks of [0, world_size) absent from it are listed as missing and make the step partial.
// Stragglers are ranks whose step_seconds exceeds `straggler_factor` x the median of the
// reporting ranks' step_seconds; the median of an even count is the lower middle value, so with
// two ranks the faster one is the reference. No rank is flagged when fewer than two reported or
// the median is not positive.
v1::ReducedStep ReduceStep(const std::map<int32_t, v1::StepReport>& reports, int32_t world_size,
                           double straggler_factor);

}  // namespace gradsync::telemetry
