#include "metrics_client.h"

#include <curl/curl.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace gradsync::cli {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

absl::StatusOr<v1::JobSeries> FetchSeries(const std::string& api_address, const std::string& job) {
  const std::string id = absl::StartsWith(job, "jobs/") ? job.substr(5) : job;
  const std::string url = absl::StrCat("http://", api_address, "/v1/jobs/", id, "/series");
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("cannot initialise libcurl");
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 15L);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat("metrics service at ", api_address, ": ", curl_easy_strerror(rc)));
  }
  if (status == 404) return absl::NotFoundError(absl::StrCat("the metrics service has no series for job ", id));
  if (status != 200) return absl::InternalError(absl::StrCat(url, " answered HTTP ", status, ": ", body));
  v1::JobSeries series;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto s = google::protobuf::util::JsonStringToMessage(body, &series, opts);
  if (!s.ok()) return absl::DataLossError(absl::StrCat(url, ": ", s.ToString()));
  return series;
}

}  // namespace gradsync::cli
