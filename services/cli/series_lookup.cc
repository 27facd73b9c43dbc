#include "series_lookup.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "connection.h"
#include "gradsync/core/env.h"
#include "metrics_client.h"
#include "series_files.h"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

// The artifact roots to look in, in order, without repeats.
std::vector<std::string> ArtifactRoots(const Args& args) {
  std::vector<std::string> roots;
  auto add = [&](const std::string& root) {
    if (!root.empty() && std::find(roots.begin(), roots.end(), root) == roots.end()) roots.push_back(root);
  };
  add(args.Get("artifact-root", ""));
  const std::string state_dir = args.Has("state-dir") ? args.Get("state-dir") : EnvOr("GRADSYNC_STATE_DIR", "");
  if (!state_dir.empty()) add((fs::path(state_dir) / "artifacts").string());
  add(EnvOr("GRADSYNC_ARTIFACT_ROOT", ""));
  return roots;
}

// The metrics service's series, or why there is none from it.
absl::StatusOr<FoundSeries> FromService(const Args& args, const std::string& id) {
  absl::StatusOr<MetricsApi> api = MetricsApiFromArgs(args, "localhost:9466");
  // A state directory without a running cluster: no service to ask, its files may still tell.
  if (!api.ok()) return api.status();
  absl::StatusOr<v1::JobSeries> series = FetchSeries(api->address, api->token, id);
  if (!series.ok()) {
    // Nothing named the service, and whatever listens at the default address will not serve this
    // caller: no service of this job's, as far as the files are concerned.
    const absl::StatusCode code = series.status().code();
    if (!api->named && (code == absl::StatusCode::kUnauthenticated || code == absl::StatusCode::kPermissionDenied)) {
      return absl::UnavailableError(
          absl::StrCat("the metrics service at ", api->address, " (the default) refused: ", series.status().message()));
    }
    return series.status();
  }
  return FoundSeries{*std::move(series), absl::StrCat("the metrics service at ", api->address)};
}

}  // namespace

absl::StatusOr<std::string> JobIdForFiles(const std::string& job) {
  const std::string id = absl::StartsWith(job, "jobs/") ? job.substr(5) : job;
  if (id.empty() || id == "." || id == ".." || absl::StrContains(id, '/')) {
    return absl::InvalidArgumentError(absl::StrCat("JOB: \"", job, "\" is not a job id (jobs/ID or ID)"));
  }
  return id;
}

absl::StatusOr<FoundSeries> FindSeries(const Args& args, const std::string& id) {
  absl::StatusOr<FoundSeries> served = FromService(args, id);
  if (served.ok()) return served;
  const absl::StatusCode code = served.status().code();
  if (code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kNotFound) return served.status();
  std::vector<std::string> tried;
  for (const std::string& root : ArtifactRoots(args)) {
    const std::string path = (fs::path(root) / id / kSeriesFileName).string();
    absl::StatusOr<v1::JobSeries> series = ReadSeriesFile(path);
    if (series.ok()) return FoundSeries{*std::move(series), path};
    if (series.status().code() != absl::StatusCode::kNotFound) return series.status();
    tried.push_back(path);
  }
  return absl::NotFoundError(absl::StrCat(
      served.status().message(), "; ",
      tried.empty() ? "and no artifact root to look in for the job's series file (give --state-dir DIR of the run, or "
                      "--artifact-root DIR)"
                    : absl::StrCat("and no series file at ", absl::StrJoin(tried, ", "))));
}

}  // namespace gradsync::cli
