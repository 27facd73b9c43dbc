// JobClient over the coordinator's REST API (/v1/jobs, protobuf JSON bodies). Watch polls the
// job, since the REST API has no stream.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "gradsync/http/client.h"
#include "job_client.h"

namespace gradsync::cli {

// How an https server is verified (both unused with http).
struct RestTls {
  std::string ca_file;      // PEM CA file; empty: the system's CAs
  std::string server_name;  // the name its certificate must carry; empty: the URL's host
};

class RestJobClient : public JobClient {
 public:
  // `base_url` is "http(s)://host:port" without a trailing slash; `address` is how the user wrote
  // it.
  RestJobClient(std::string address, std::string base_url, std::string token, RestTls tls);

  absl::StatusOr<v1::Job> Create(const v1::JobSpec& spec) override;
  absl::StatusOr<v1::Job> Get(const std::string& name) override;
  absl::StatusOr<v1::ListJobsResponse> List(int page_size, const std::string& page_token) override;
  absl::StatusOr<v1::Job> Cancel(const std::string& name) override;
  absl::StatusOr<v1::Job> Checkpoint(const std::string& name) override;
  absl::StatusOr<v1::ListWorkersResponse> ListWorkers() override;
  absl::StatusOr<v1::GetJobLogsResponse> GetLogs(const v1::GetJobLogsRequest& request) override;
  // GET /v1/jobs/{id} about every second, calling `on_update` when the job differs from the
  // last answer.
  absl::StatusOr<v1::Job> Watch(const std::string& name, const std::function<void(const v1::Job&)>& on_update,
                                const std::atomic<bool>* stop) override;
  // GET /v1/jobs/{id}/artifacts?prefix=&sha256=.
  absl::StatusOr<v1::ListArtifactsResponse> ListArtifacts(const std::string& name, const std::string& prefix,
                                                          bool sha256) override;
  // GET /v1/jobs/{id}/artifacts/{path}, each component of `path` escaped on its own and sent as
  // given ("." and ".." too, for the server to refuse); the trailer is Content-Length and
  // X-Checksum-Sha256 (DATA_LOSS without the latter).
  absl::StatusOr<v1::ArtifactTrailer> GetArtifact(
      const std::string& name, const std::string& path, const std::function<void(const v1::Artifact&)>& on_header,
      const std::function<absl::Status(absl::string_view)>& on_data) override;

  const std::string& address() const override { return address_; }

 private:
  // Sends the request and parses a 2xx body into `out`; any other answer becomes the status the
  // server's error body names.
  absl::Status Send(const std::string& method, const std::string& path, const std::string& body,
                    google::protobuf::Message* out, absl::Duration timeout = absl::Seconds(15));
  // The request to `path` with the client's token and TLS settings.
  http::HttpRequest Request(const std::string& method, const std::string& path) const;

  std::string address_;
  std::string base_url_;
  std::string token_;
  RestTls tls_;
};

}  // namespace gradsync::cli
