// Job logs: the lines a job's workers ship while they run its ranks, and reading them back.
#include "absl/strings/str_cat.h"
#include "coordinator.h"

namespace gradsync::coordinator {

// The most lines one report may carry (the worker sends at most this many at once).
constexpr int kMaxReportLines = 500;

absl::Status Coordinator::ReportLogs(const v1::ReportLogsRequest& request) {
  if (request.lines_size() > kMaxReportLines) {
    return absl::InvalidArgumentError(
        absl::StrCat("lines: at most ", kMaxReportLines, " per report, got ", request.lines_size()));
  }
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Generation*> gen =
        ReportedGenerationLocked(request.job_id(), request.generation(), request.worker_id(), request.rank());
    if (!gen.ok()) return gen.status();
  }
  job_logs_.Append(request, options_.clock());
  return absl::OkStatus();
}

absl::StatusOr<v1::GetJobLogsResponse> Coordinator::GetJobLogs(const v1::GetJobLogsRequest& request) {
  if (request.limit() < 0)
    return absl::InvalidArgumentError(absl::StrCat("limit: must not be negative, got ", request.limit()));
  if (request.has_rank() && request.rank() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("rank: must not be negative, got ", request.rank()));
  }
  if (request.after_seq() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("afterSeq: must not be negative, got ", request.after_seq()));
  }
  absl::StatusOr<v1::Job> job = GetJob(request.name());
  if (!job.ok()) return job.status();
  const std::optional<int> rank = request.has_rank() ? std::optional<int>(request.rank()) : std::nullopt;
  return job_logs_.Read(job->id(), rank, request.after_seq(), request.limit());
}

}  // namespace gradsync::coordinator
