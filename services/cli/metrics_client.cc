#include "metrics_client.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gradsync/http/client.h"
#include "rest_answer.h"

namespace gradsync::cli {

absl::StatusOr<v1::JobSeries> FetchSeries(const std::string& api_address, const std::string& token,
                                          const std::string& job) {
  const std::string id = absl::StartsWith(job, "jobs/") ? job.substr(5) : job;
  http::HttpRequest request;
  request.url = absl::StrCat("http://", api_address, "/v1/jobs/", http::EscapeUrlComponent(id), "/series");
  request.bearer_token = token;
  auto response = http::SendHttp(request, absl::StrCat("metrics service at ", api_address));
  if (!response.ok()) return response.status();
  if (response->status == 404)
    return absl::NotFoundError(absl::StrCat("the metrics service has no series for job ", id));
  if (response->status == 401) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the metrics service at ", api_address, " wants ", token.empty() ? "a" : "another",
        " token: pass --metrics-token-file (env GRADSYNC_METRICS_TOKEN_FILE), or --state-dir for a local cluster"));
  }
  v1::JobSeries series;
  if (absl::Status s = ParseRestAnswer(response->status, response->body, request.url, &series); !s.ok()) return s;
  return series;
}

}  // namespace gradsync::cli
