#include "gradsync/telemetry/metrics_reporter.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "gradsync/core/log.h"
#include "gradsync/rpc/server.h"
#include "gradsync/v1/metrics.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace gradsync::telemetry {

// One ReportSteps stream. The context exists before the call starts so that it can be
// published for cancellation first.
class MetricsReporter::Connection {
 public:
  grpc::ClientContext context;

  void Open(v1::MetricsService::Stub* stub) { writer_ = stub->ReportSteps(&context, &response_); }
  bool Write(const v1::StepReport& report) { return writer_->Write(report); }
  // Half-closes and waits for the service's answer, which confirms every report written.
  grpc::Status Close() {
    writer_->WritesDone();
    return writer_->Finish();
  }
  // The reason a write failed, or CANCELLED after context.TryCancel().
  grpc::Status Finish() { return writer_->Finish(); }

 private:
  v1::ReportStepsResponse response_;
  std::unique_ptr<grpc::ClientWriter<v1::StepReport>> writer_;
};

MetricsReporter::MetricsReporter(MetricsReporterOptions options) : options_(std::move(options)) {
  if (enabled()) thread_ = std::thread([this] { Run(); });
}

MetricsReporter::~MetricsReporter() { Close(options_.close_drain); }

void MetricsReporter::Report(v1::StepReport report) {
  if (!enabled()) return;
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  ++stats_.reported;
  if (queue_.size() >= std::max<size_t>(options_.queue_capacity, 1)) {
    queue_.pop_front();
    ++stats_.dropped;
  }
  queue_.push_back(std::move(report));
}

absl::Status MetricsReporter::Flush(absl::Duration timeout) {
  if (!enabled()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (stop_) return absl::FailedPreconditionError("metrics reporter is closed");
  const int64_t target = ++flush_requested_;
  auto done = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return flush_done_ >= target || stop_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout) || flush_done_ < target) {
    return absl::DeadlineExceededError("metrics reports not confirmed by " + options_.address);
  }
  return absl::OkStatus();
}

void MetricsReporter::Close(absl::Duration drain) {
  if (!enabled()) return;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
  }
  (void)Flush(drain);
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (active_context_ != nullptr) active_context_->TryCancel();
  }
  thread_.join();
}

MetricsReporterStats MetricsReporter::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

bool MetricsReporter::StreamEnded(const grpc::Status& status, int64_t flush_target, int64_t unconfirmed) {
  absl::MutexLock lock(&mu_);
  active_context_ = nullptr;
  if (status.ok()) {
    flush_done_ = flush_target;
  } else {
    ++stats_.stream_failures;
    stats_.unconfirmed += unconfirmed;
    stats_.connected = false;
  }
  return stop_;
}

bool MetricsReporter::WaitToRetry(absl::Duration* backoff) {
  absl::MutexLock lock(&mu_);
  if (mu_.AwaitWithTimeout(absl::Condition(&stop_), *backoff)) return true;
  *backoff = std::min(*backoff * 2, options_.max_backoff);
  return false;
}

bool MetricsReporter::HasWork() const { return stop_ || !queue_.empty() || flush_requested_ > flush_done_; }

void MetricsReporter::Run() {
  rpc::ChannelOptions channel;
  channel.bearer_token = options_.bearer_token;
  auto stub = v1::MetricsService::NewStub(rpc::MakeChannel(options_.address, channel));
  std::unique_ptr<Connection> conn;
  std::optional<v1::StepReport> in_flight;  // taken from the queue, not yet written
  absl::Duration backoff = options_.initial_backoff;
  bool in_outage = false;
  int64_t unconfirmed = 0;  // written into the open stream since it opened

  while (true) {
    int64_t flush_target = 0;
    bool fresh = false;
    {
      absl::MutexLock lock(&mu_);
      if (!in_flight) mu_.Await(absl::Condition(this, &MetricsReporter::HasWork));
      if (stop_) break;
      if (!in_flight && !queue_.empty()) {
        in_flight = std::move(queue_.front());
        queue_.pop_front();
      }
      flush_target = flush_requested_;
      if (!in_flight && conn == nullptr) {
        // A flush with nothing written since the last confirmation: nothing to confirm.
        flush_done_ = flush_target;
        continue;
      }
      if (conn == nullptr) {
        conn = std::make_unique<Connection>();
        active_context_ = &conn->context;
        fresh = true;
      }
    }
    if (fresh) conn->Open(stub.get());  // fails fast (the first write reports it) when unreachable
    if (in_flight && conn->Write(*in_flight)) {
      in_flight.reset();
      ++unconfirmed;
      backoff = options_.initial_backoff;
      if (in_outage) {
        GS_LOG(INFO) << "metrics service at " << options_.address << " is back";
      }
      in_outage = false;
      absl::MutexLock lock(&mu_);
      ++stats_.sent;
      stats_.connected = true;
      continue;
    }
    const grpc::Status status = in_flight ? conn->Finish() : conn->Close();
    conn.reset();
    const bool stopping = StreamEnded(status, flush_target, unconfirmed);
    unconfirmed = 0;
    if (stopping) break;  // Close() cancelled the stream: not an outage
    if (status.ok()) continue;
    if (!in_outage) {
      GS_LOG(WARNING) << "metrics service at " << options_.address << " unreachable (" << status.error_message()
                      << "); queueing up to " << options_.queue_capacity << " step reports and retrying";
      in_outage = true;
    }
    if (WaitToRetry(&backoff)) break;
  }

  if (conn != nullptr) {
    conn->context.TryCancel();
    (void)conn->Finish();
  }
  absl::MutexLock lock(&mu_);
  active_context_ = nullptr;
  stats_.connected = false;
}

}  // namespace gradsync::telemetry
