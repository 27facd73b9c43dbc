// Where `gradsync report` finds a job's series: the metrics service first, then the series file
// the job left beside its weights.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gradsync/core/args.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

struct FoundSeries {
  v1::JobSeries series;
  std::string source;  // "the metrics service at ADDRESS" or the file's path
};

// A job id as given ("jobs/ID" or "ID") fit to name a directory: INVALID_ARGUMENT for an empty
// one, "." or "..", or one holding '/'.
absl::StatusOr<std::string> JobIdForFiles(const std::string& job);

// The series of job `id` (JobIdForFiles's): from the metrics service the options name
// (MetricsApiFromArgs, default localhost:9466); when none answers or it does not know the job,
// from <dir>/<id>/series.jsonl for each artifact root in order: --artifact-root,
// <--state-dir>/artifacts (or GRADSYNC_STATE_DIR's), GRADSYNC_ARTIFACT_ROOT. A service that
// answers with another error (a token it refuses) is that error. NOT_FOUND, saying what was tried,
// when neither has it.
absl::StatusOr<FoundSeries> FindSeries(const Args& args, const std::string& id);

}  // namespace gradsync::cli
