// The CLI's client of the coordinator's job API, over gRPC (JobService) or REST (/v1/jobs).
// Both transports return the same messages and status codes, so commands print the same output
// whichever one the address names.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gradsync/v1/artifact.pb.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/logs.pb.h"

namespace gradsync::cli {

// Errors are the server's status code and message (INVALID_ARGUMENT names the spec field,
// UNAUTHENTICATED says what is wrong with the token). Transport failures are UNAVAILABLE or
// DEADLINE_EXCEEDED and name the address. No error message contains the token.
// A client is used from one thread at a time.
class JobClient {
 public:
  virtual ~JobClient() = default;

  virtual absl::StatusOr<v1::Job> Create(const v1::JobSpec& spec) = 0;
  // `name` is "jobs/{id}" or the bare id.
  virtual absl::StatusOr<v1::Job> Get(const std::string& name) = 0;
  virtual absl::StatusOr<v1::ListJobsResponse> List(int page_size, const std::string& page_token) = 0;
  // FAILED_PRECONDITION when the job has already ended.
  virtual absl::StatusOr<v1::Job> Cancel(const std::string& name) = 0;

  // Asks a running job to checkpoint at its next step boundary; returns the job as it was asked.
  // FAILED_PRECONDITION when the job is not running.
  virtual absl::StatusOr<v1::Job> Checkpoint(const std::string& name) = 0;

  // The worker pool: registered workers, then those lost within the last hour.
  virtual absl::StatusOr<v1::ListWorkersResponse> ListWorkers() = 0;

  // The job's own log lines the request selects (logs.proto): JobLogService.GetJobLogs, or
  // GET /v1/jobs/{id}/logs.
  virtual absl::StatusOr<v1::GetJobLogsResponse> GetLogs(const v1::GetJobLogsRequest& request) = 0;

  // Calls `on_update` with the job now and again whenever it changes, until it ends (returns
  // the final job) or `stop` becomes true (CANCELLED). Rides out a coordinator that is briefly
  // unreachable while the job runs.
  virtual absl::StatusOr<v1::Job> Watch(const std::string& name, const std::function<void(const v1::Job&)>& on_update,
                                        const std::atomic<bool>* stop) = 0;

  // The files in the job's directory whose paths start with `prefix` (all when empty), sorted by
  // path; with `sha256` each carries its digest (the server reads every file for it).
  virtual absl::StatusOr<v1::ListArtifactsResponse> ListArtifacts(const std::string& name, const std::string& prefix,
                                                                  bool sha256) = 0;
  // Streams artifact `path` of job `name`: `on_header` once, with the file as the server opened it
  // (its size, for progress), then `on_data` with each piece of its bytes in order; an error from
  // `on_data` ends the transfer and is returned. Returns what the server says it sent (size and
  // SHA-256), for the caller to compare with what it received.
  virtual absl::StatusOr<v1::ArtifactTrailer> GetArtifact(
      const std::string& name, const std::string& path, const std::function<void(const v1::Artifact&)>& on_header,
      const std::function<absl::Status(absl::string_view)>& on_data) = 0;

  // The address as the user gave it (for messages).
  virtual const std::string& address() const = 0;
};

struct JobClientOptions {
  // "host:port" for gRPC, "http://host:port" or "https://host:port" for REST.
  std::string address;
  // Sent as "Authorization: Bearer <token>" with every call when not empty.
  std::string token;
  // PEM file of the CA that signed the server's certificate. With a gRPC address it makes the
  // channel TLS; with https it replaces the system's CAs. INVALID_ARGUMENT with http://.
  std::string tls_ca_file;
  // The name the server's certificate must carry when it differs from the address's host (a
  // port-forward to 127.0.0.1 of a coordinator whose certificate names its Service). Needs TLS:
  // https://, or --tls-ca with a gRPC address; INVALID_ARGUMENT otherwise.
  std::string tls_server_name;
};

// The client for `options.address`'s transport. INVALID_ARGUMENT for an address that is neither
// form; NOT_FOUND naming the CA file when it cannot be read. Connects lazily: an unreachable
// server shows in the first call.
absl::StatusOr<std::unique_ptr<JobClient>> MakeJobClient(const JobClientOptions& options);

// Every job, page by page (`page_size` a page). A server whose pages do not move on (a token seen
// before, more pages than any coordinator keeps jobs for) is DATA_LOSS, not a loop.
absl::StatusOr<v1::ListJobsResponse> ListAllJobs(JobClient& client, int page_size);

bool IsTerminal(v1::JobState state);

// `status`, with advice to pass --tls-server-name appended when it is a TLS handshake that failed
// because the server's certificate does not name the host dialled (gRPC's and libcurl's words for
// it); otherwise `status` unchanged.
absl::Status AdviseTlsServerName(absl::Status status);

}  // namespace gradsync::cli
