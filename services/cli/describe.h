// `gradsync get JOB`: one job described as kubectl describe does, for a person: the spec's
// highlights (model, data, schedule, parallelism, checkpointing), its times and restarts, the
// progress or result, the committed checkpoints and the events.
#pragma once

#include <string>

#include "gradsync/v1/job.pb.h"

namespace gradsync::cli {

// Several "Label:  value" lines, then the Checkpoints and Events tables; sections with nothing
// to show are left out.
std::string DescribeJob(const v1::Job& job);

}  // namespace gradsync::cli
