// The coordinator's REST API as a request reaches it after the HTTP server (RestApi::Handle), on a
// real Coordinator with an in-memory store, fresh for every input so that each input is one
// story: create a job, then get, list, cancel, checkpoint it, and so on.
//
// Input: requests separated by a line "====". Each is a request line "METHOD /path?query", header
// lines "Name: value", an empty line, and the body (the rest). Query parameters are split at '&'
// and '=' as the server would, already decoded. "{id}" in a path stands for the id of the job the
// input created first, so that a short input can reach every route of an existing job.
// Every reply must have a known status (never 500) and a non-empty UTF-8 body.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "coordinator.h"
#include "fuzz_support.h"
#include "google/protobuf/stubs/common.h"
#include "job_store.h"
#include "rest_gateway.h"

namespace gradsync::fuzz {
namespace {

constexpr char kToken[] = "fuzz-token";
constexpr char kSeparator[] = "\n====\n";

http::Request ParseRequest(absl::string_view text, const std::string& job_id) {
  http::Request request;
  const size_t head_end = text.find("\n\n");
  const absl::string_view head = text.substr(0, head_end);
  if (head_end != absl::string_view::npos) request.body = std::string(text.substr(head_end + 2));
  std::vector<absl::string_view> lines = absl::StrSplit(head, '\n');
  const std::vector<std::string> start = absl::StrSplit(lines[0], absl::MaxSplits(' ', 1));
  request.method = start[0];
  const std::string target = start.size() > 1 ? absl::StrReplaceAll(start[1], {{"{id}", job_id}}) : "";
  const std::vector<std::string> path_query = absl::StrSplit(target, absl::MaxSplits('?', 1));
  request.path = path_query[0];
  if (path_query.size() > 1) {
    for (absl::string_view pair : absl::StrSplit(path_query[1], '&')) {
      const std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
      request.query.emplace_back(kv[0], kv.size() > 1 ? kv[1] : "");
    }
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> kv = absl::StrSplit(lines[i], absl::MaxSplits(": ", 1));
    request.headers.emplace_back(kv[0], kv.size() > 1 ? kv[1] : "");
  }
  return request;
}

bool KnownStatus(int status) {
  for (int known : {200, 400, 401, 403, 404, 405, 409, 413, 501, 503, 504}) {
    if (status == known) return true;
  }
  return false;
}

}  // namespace
}  // namespace gradsync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  coordinator::CoordinatorOptions options;
  // An artifact root that does not exist: the artifact routes answer from the request alone (an
  // empty listing, a refused path, 404), never with bytes of a file that happens to be there.
  options.artifact_root = "/nonexistent/gradsync-fuzz-artifacts";
  coordinator::Coordinator c(options, std::make_unique<coordinator::InMemoryJobStore>());
  const coordinator::RestApi api(&c, coordinator::TokenAuth(fuzz::kToken));
  std::string job_id = "job-none";
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  for (absl::string_view text : absl::StrSplit(input, fuzz::kSeparator)) {
    const http::Reply reply = api.Handle(fuzz::ParseRequest(text, job_id));
    // 500 means the coordinator failed on its own state, which no request should bring about.
    GRADSYNC_FUZZ_CHECK(fuzz::KnownStatus(reply.status), std::to_string(reply.status) + " " + reply.body);
    GRADSYNC_FUZZ_CHECK(!reply.body.empty(), "an empty body");
    GRADSYNC_FUZZ_CHECK(
        google::protobuf::internal::IsStructurallyValidUTF8(reply.body.data(), static_cast<int>(reply.body.size())),
        "a body that is not UTF-8: " + reply.body);
    if (job_id == "job-none") {
      const auto jobs = c.ListJobs(1, "");
      if (jobs.ok() && jobs->jobs_size() > 0) job_id = jobs->jobs(0).id();
    }
  }
  return 0;
}
