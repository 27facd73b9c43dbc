// A rank's own log lines, while it runs a generation: appended to a file of the job's (a local
// cluster's state directory, for `gradsync logs` after the cluster is gone) and shipped to the
// coordinator in batches (WorkerLogService.ReportLogs), for `gradsync logs` against any cluster.
//
// Shipping is bounded so that a chatty or failing job cannot hurt training or the coordinator:
// lines pass a token bucket (`lines_per_second`, bursts of `burst`), wait in a queue of at most
// `max_queued` (the oldest dropped when a coordinator away lets it fill), leave in batches of at
// most `max_batch` every `interval`, and each message is cut to `max_message_bytes`. Every line
// dropped is counted and reported with the next batch. The file gets every line.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/core/log.h"
#include "gradsync/v1/logs.pb.h"

namespace gradsync::worker {

struct JobLogLimits {
  double lines_per_second = 50;
  int burst = 500;
  size_t max_queued = 5000;
  int max_batch = 500;
  absl::Duration interval = absl::Seconds(1);
  size_t max_message_bytes = 2048;
};

// Sends one batch; a failure keeps the batch queued for the next try, except FAILED_PRECONDITION,
// PERMISSION_DENIED (the generation is over, or no longer this worker's) and UNIMPLEMENTED (a
// coordinator without job logs), which drop it.
using SendLogs = std::function<absl::Status(const v1::ReportLogsRequest&)>;

class JobLogShipper {
 public:
  // `identity` names the worker, job, generation and rank of every batch. `file`: where to append
  // the lines as text ("" for none; its directory is created). Starts the sending thread.
  JobLogShipper(v1::ReportLogsRequest identity, std::string file, SendLogs send, JobLogLimits limits = {});
  // Stop(absl::Seconds(2)) if not stopped.
  ~JobLogShipper();
  JobLogShipper(const JobLogShipper&) = delete;
  JobLogShipper& operator=(const JobLogShipper&) = delete;

  // Takes one line (a LogTap); thread-safe and quick: no I/O but the file's append.
  void Add(const LogRecord& record);
  // Sends what is queued, trying until `deadline` passes, and joins the thread. Idempotent.
  void Stop(absl::Duration deadline);

  // Lines dropped so far (rate, queue bound, or refused batches) and lines sent.
  int64_t dropped() const;
  int64_t sent() const;

 private:
  void Run();
  // Takes up to max_batch lines and the dropped count into a request; false when none.
  bool TakeBatch(v1::ReportLogsRequest* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Admit(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends `batch`; on a failure worth retrying puts its lines back at the front. False on failure.
  bool SendOrRequeue(v1::ReportLogsRequest batch);
  bool ReadyToSend() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  bool Stopping() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const v1::ReportLogsRequest identity_;
  const std::string file_;
  const SendLogs send_;
  const JobLogLimits limits_;
  int fd_ = -1;  // the file, opened for appending; -1 without one

  mutable absl::Mutex mu_;
  std::deque<v1::LogLine> queue_ ABSL_GUARDED_BY(mu_);
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time refilled_ ABSL_GUARDED_BY(mu_);
  int64_t unreported_drops_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time stop_deadline_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// The file of `job`'s rank `rank` under a job log directory: DIR/<job>/rank-<rank>.log.
std::string JobLogFile(const std::string& dir, const std::string& job, int rank);

}  // namespace gradsync::worker
