// Reading a job's reduced series from the metrics service's JSON API.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::cli {

// GET http://<api_address>/v1/jobs/<job>/series, with "Authorization: Bearer <token>" when `token`
// is not empty. NOT_FOUND when the service has no such job; UNAUTHENTICATED when it wants another
// token (or one); UNAVAILABLE naming the address when it cannot be reached.
absl::StatusOr<v1::JobSeries> FetchSeries(const std::string& api_address, const std::string& token,
                                          const std::string& job);

}  // namespace gradsync::cli
