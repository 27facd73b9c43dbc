#include "metrics_client.h"

#include "gradsync/core/json_depth.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/http/client.h"

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
  if (response->status != 200) {
    return absl::InternalError(absl::StrCat(request.url, " answered HTTP ", response->status, ": ", response->body));
  }
  if (absl::Status deep = CheckJsonDepth(response->body, "the metrics API's answer"); !deep.ok()) {
    return absl::DataLossError(deep.message());
  }
  v1::JobSeries series;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto s = google::protobuf::util::JsonStringToMessage(response->body, &series, opts);
  if (!s.ok()) return absl::DataLossError(absl::StrCat(request.url, ": ", s.ToString()));
  return series;
}

}  // namespace gradsync::cli
