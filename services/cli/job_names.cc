#include "job_names.h"

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gradsync/core/terminal_text.h"

namespace gradsync::cli {
namespace {

bool Newer(const v1::Job& a, const v1::Job& b) {
  const auto& x = a.create_time();
  const auto& y = b.create_time();
  return x.seconds() != y.seconds() ? x.seconds() > y.seconds() : x.nanos() > y.nanos();
}

// The newest job whose spec name `given` is (without "jobs/"), once the coordinator knew no job of
// that id; said on stderr when several share it. NOT_FOUND naming `given` when none.
absl::StatusOr<std::string> NewestNamed(JobClient& client, const std::string& given) {
  const std::string bare(absl::StripPrefix(given, "jobs/"));
  absl::StatusOr<v1::ListJobsResponse> all = ListAllJobs(client, 500);
  if (!all.ok()) return all.status();
  const v1::Job* newest = nullptr;
  int named = 0;
  for (const v1::Job& j : all->jobs()) {
    if (j.spec().name() != bare) continue;
    ++named;
    if (newest == nullptr || Newer(j, *newest)) newest = &j;
  }
  if (newest == nullptr) {
    return absl::NotFoundError(absl::StrCat("no job has the id or the name \"", TerminalSafe(bare),
                                            "\" (gradsync list shows the jobs)"));
  }
  if (named > 1) {
    std::fprintf(stderr, "%s: the newest of %d jobs named so, %s\n", TerminalSafe(bare).c_str(), named,
                 TerminalSafe(newest->name()).c_str());
  }
  return newest->name();
}

// Calls `call` with `name`, and once more with the newest job of that spec name when the
// coordinator knew no job by it.
template <typename T, typename Call>
absl::StatusOr<T> WithName(JobClient& inner, const std::string& name, Call call) {
  absl::StatusOr<T> first = call(name);
  if (first.status().code() != absl::StatusCode::kNotFound) return first;
  absl::StatusOr<std::string> resolved = NewestNamed(inner, name);
  if (!resolved.ok() || *resolved == name) return first;
  return call(*resolved);
}

class ResolvingClient : public JobClient {
 public:
  explicit ResolvingClient(std::unique_ptr<JobClient> inner) : inner_(std::move(inner)) {}

  absl::StatusOr<v1::Job> Create(const v1::JobSpec& spec) override { return inner_->Create(spec); }
  absl::StatusOr<v1::Job> Get(const std::string& name) override {
    return WithName<v1::Job>(*inner_, name, [&](const std::string& n) { return inner_->Get(n); });
  }
  absl::StatusOr<v1::ListJobsResponse> List(int page_size, const std::string& page_token) override {
    return inner_->List(page_size, page_token);
  }
  absl::StatusOr<v1::Job> Cancel(const std::string& name) override {
    return WithName<v1::Job>(*inner_, name, [&](const std::string& n) { return inner_->Cancel(n); });
  }
  absl::StatusOr<v1::Job> Checkpoint(const std::string& name) override {
    return WithName<v1::Job>(*inner_, name, [&](const std::string& n) { return inner_->Checkpoint(n); });
  }
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers() override { return inner_->ListWorkers(); }
  absl::StatusOr<v1::GetJobLogsResponse> GetLogs(const v1::GetJobLogsRequest& request) override {
    return WithName<v1::GetJobLogsResponse>(*inner_, request.name(), [&](const std::string& n) {
      v1::GetJobLogsRequest named = request;
      named.set_name(n);
      return inner_->GetLogs(named);
    });
  }
  absl::StatusOr<v1::Job> Watch(const std::string& name, const std::function<void(const v1::Job&)>& on_update,
                                const std::atomic<bool>* stop) override {
    return WithName<v1::Job>(*inner_, name, [&](const std::string& n) { return inner_->Watch(n, on_update, stop); });
  }
  absl::StatusOr<v1::ListArtifactsResponse> ListArtifacts(const std::string& name, const std::string& prefix,
                                                          bool sha256) override {
    return WithName<v1::ListArtifactsResponse>(
        *inner_, name, [&](const std::string& n) { return inner_->ListArtifacts(n, prefix, sha256); });
  }
  absl::StatusOr<v1::ArtifactTrailer> GetArtifact(const std::string& name, const std::string& path,
                                                  const std::function<void(const v1::Artifact&)>& on_header,
                                                  const std::function<absl::Status(absl::string_view)>& on_data) override {
    return WithName<v1::ArtifactTrailer>(
        *inner_, name, [&](const std::string& n) { return inner_->GetArtifact(n, path, on_header, on_data); });
  }
  const std::string& address() const override { return inner_->address(); }

 private:
  std::unique_ptr<JobClient> inner_;
};

}  // namespace

absl::StatusOr<std::string> ResolveJobName(JobClient& client, const std::string& given) {
  absl::StatusOr<v1::Job> as_id = client.Get(given);
  if (as_id.ok()) return as_id->name();
  if (as_id.status().code() != absl::StatusCode::kNotFound) return as_id.status();
  return NewestNamed(client, given);
}

std::unique_ptr<JobClient> ResolvingJobNames(std::unique_ptr<JobClient> inner) {
  return std::make_unique<ResolvingClient>(std::move(inner));
}

}  // namespace gradsync::cli
