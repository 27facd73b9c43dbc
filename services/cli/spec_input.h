// Reading a job spec from the command line: a file, --set overrides and --workers.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::cli {

// Reads `path` with `overrides`; when `workers` > 0 and no override names training.worldSize,
// the world size becomes `workers`. Fills defaults and validates; errors name the field.
absl::StatusOr<v1::JobSpec> LoadSpecFromCommandLine(const std::string& path, const std::vector<std::string>& overrides,
                                                    int workers);

}  // namespace gradsync::cli
