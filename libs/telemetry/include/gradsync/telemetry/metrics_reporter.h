// MetricsReporter: the worker's side of MetricsService.ReportSteps.
//
// Training must never wait for, or fail because of, metrics. Report() only appends to a bounded
// in-memory queue (dropping the oldest report when full); one background thread holds a
// ReportSteps stream to the metrics service and writes the queue into it, reopening the stream
// with exponential backoff whenever the service is unreachable. Delivery is best effort: a report
// written into a stream that then breaks may be lost, and one whose write failed is sent again on
// the next stream, so the service may see it twice (it ignores duplicates).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/v1/metrics.pb.h"

namespace grpc {
class Status;
}  // namespace grpc

namespace grpc {
class ClientContext;
}  // namespace grpc

namespace gradsync::telemetry {

struct MetricsReporterOptions {
  // host:port of gradsync-metrics' gRPC listener. Empty disables reporting: no thread starts and
  // Report() discards.
  std::string address;
  // Sent as "authorization: Bearer <token>" on every stream when not empty: the cluster token, which
  // a metrics service listening beyond loopback asks for.
  std::string bearer_token;
  // Reports held while the service is slow or down; beyond this the oldest is dropped.
  size_t queue_capacity = 4096;
  // Waits between attempts to reopen the stream: doubling from initial to max.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(5);
  // How long the destructor waits for queued reports to be delivered before it gives up.
  absl::Duration close_drain = absl::Seconds(1);
};

struct MetricsReporterStats {
  int64_t reported = 0;         // Report() calls while enabled
  int64_t dropped = 0;          // pushed out of a full queue
  int64_t sent = 0;             // written into a stream
  int64_t stream_failures = 0;  // streams that failed to open or broke
  // Written into a stream that then broke before the service confirmed it: some of these may
  // have arrived, some may be lost.
  int64_t unconfirmed = 0;
  bool connected = false;  // a stream is open and its last write succeeded
};

// Report(), Flush(), stats() and Close() may be called from any thread.
class MetricsReporter {
 public:
  explicit MetricsReporter(MetricsReporterOptions options);
  // Close(options.close_drain).
  ~MetricsReporter();

  MetricsReporter(const MetricsReporter&) = delete;
  MetricsReporter& operator=(const MetricsReporter&) = delete;

  bool enabled() const { return !options_.address.empty(); }

  // Queues `report` for sending. Never blocks on the network and never fails; after Close() or
  // when disabled it discards.
  void Report(v1::StepReport report);

  // Waits until every report queued before the call has left the queue and the stream carrying
  // them has been closed cleanly, the service confirming it received them (the next report opens
  // a new stream). A stream that broke earlier is not waited for: what it carried is counted in
  // stats().unconfirmed. OK at once when disabled; DEADLINE_EXCEEDED when `timeout` passes
  // first, e.g. because the service is down (reports stay queued); FAILED_PRECONDITION after
  // Close().
  absl::Status Flush(absl::Duration timeout);

  // Flushes for up to `drain`, then stops the thread (cancelling a stream write in progress).
  // Reports still queued are discarded. Idempotent.
  void Close(absl::Duration drain);

  MetricsReporterStats stats() const;

 private:
  class Connection;

  void Run();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records how the stream that wrote `unconfirmed` reports ended (a flush up to `flush_target`
  // confirmed when it ended well); whether the reporter is stopping.
  bool StreamEnded(const grpc::Status& status, int64_t flush_target, int64_t unconfirmed) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits `*backoff` before reconnecting, then doubles it up to max_backoff; true when the
  // reporter stopped meanwhile.
  bool WaitToRetry(absl::Duration* backoff) ABSL_LOCKS_EXCLUDED(mu_);

  const MetricsReporterOptions options_;
  mutable absl::Mutex mu_;
  std::deque<v1::StepReport> queue_ ABSL_GUARDED_BY(mu_);
  // Flush() asks by raising flush_requested_; the thread answers by raising flush_done_ to it.
  int64_t flush_requested_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t flush_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // The open stream's context, so that Close() can cancel a blocked write.
  grpc::ClientContext* active_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  MetricsReporterStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace gradsync::telemetry
