#include "job_log_shipper.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/core/log.h"
#include "gradsync/core/log_line.h"

namespace gradsync::worker {
namespace {

// The message cut to `max` bytes on a UTF-8 character boundary, with "..." when cut.
std::string Cut(std::string_view message, size_t max) {
  if (message.size() <= max) return std::string(message);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(message[end]) & 0xC0) == 0x80) --end;
  return absl::StrCat(absl::string_view(message.data(), end), "...");
}

}  // namespace

std::string JobLogFile(const std::string& dir, const std::string& job, int rank) {
  return (std::filesystem::path(dir) / job / absl::StrCat("rank-", rank, ".log")).string();
}

JobLogShipper::JobLogShipper(v1::ReportLogsRequest identity, std::string file, SendLogs send, JobLogLimits limits)
    : identity_(std::move(identity)), file_(std::move(file)), send_(std::move(send)), limits_(limits) {
  if (!file_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(file_).parent_path(), ec);
    fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    // Without the file the lines still ship; the worker's own log says why.
    if (fd_ < 0) {
      GS_LOG(WARNING) << "cannot open the job log " << file_ << ": " << std::strerror(errno);
    }
  }
  absl::MutexLock lock(&mu_);
  tokens_ = limits_.burst;
  refilled_ = absl::Now();
  thread_ = std::thread([this] { Run(); });
}

JobLogShipper::~JobLogShipper() {
  Stop(absl::Seconds(2));
  if (fd_ >= 0) ::close(fd_);
}

bool JobLogShipper::Admit(absl::Time now) {
  tokens_ =
      std::min<double>(limits_.burst, tokens_ + absl::ToDoubleSeconds(now - refilled_) * limits_.lines_per_second);
  refilled_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

void JobLogShipper::Add(const LogRecord& record) {
  v1::LogLine line;
  *line.mutable_time() = google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(record.time));
  line.set_level(LogLevelName(record.level));
  line.set_source(std::string(record.source));
  line.set_message(Cut(record.message, limits_.max_message_bytes));
  line.set_rank(identity_.rank());
  line.set_generation(identity_.generation());
  if (fd_ >= 0) {
    const std::string text = LogLineText(line);
    ssize_t ignored = ::write(fd_, text.data(), text.size());
    (void)ignored;
  }
  absl::MutexLock lock(&mu_);
  if (stopping_ || !Admit(record.time)) {
    ++dropped_;
    ++unreported_drops_;
    return;
  }
  if (queue_.size() >= limits_.max_queued) {
    queue_.pop_front();
    ++dropped_;
    ++unreported_drops_;
  }
  queue_.push_back(std::move(line));
}

bool JobLogShipper::TakeBatch(v1::ReportLogsRequest* batch) {
  if (queue_.empty() && unreported_drops_ == 0) return false;
  *batch = identity_;
  const size_t n = std::min<size_t>(queue_.size(), static_cast<size_t>(limits_.max_batch));
  for (size_t i = 0; i < n; ++i) {
    *batch->add_lines() = std::move(queue_.front());
    queue_.pop_front();
  }
  batch->set_dropped(unreported_drops_);
  unreported_drops_ = 0;
  return true;
}

bool JobLogShipper::SendOrRequeue(v1::ReportLogsRequest batch) {
  const absl::Status s = send_(batch);
  absl::MutexLock lock(&mu_);
  if (s.ok()) {
    sent_ += batch.lines_size();
    return true;
  }
  // Over, not this worker's, or a coordinator without job logs: trying again cannot help.
  const bool final = s.code() == absl::StatusCode::kFailedPrecondition ||
                     s.code() == absl::StatusCode::kPermissionDenied || s.code() == absl::StatusCode::kUnimplemented;
  unreported_drops_ += batch.dropped();
  if (final) {
    dropped_ += batch.lines_size();
    return false;
  }
  // Back to the front, oldest first, within the queue's bound.
  for (int i = batch.lines_size() - 1; i >= 0; --i) {
    if (queue_.size() >= limits_.max_queued) {
      ++dropped_;
      ++unreported_drops_;
      continue;
    }
    queue_.push_front(std::move(*batch.mutable_lines(i)));
  }
  return false;
}

bool JobLogShipper::ReadyToSend() const { return stopping_ || queue_.size() >= static_cast<size_t>(limits_.max_batch); }

bool JobLogShipper::Stopping() const { return stopping_; }

void JobLogShipper::Run() {
  bool failed = false;
  for (;;) {
    v1::ReportLogsRequest batch;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      // After a failed send, wait a whole interval (or for Stop) before the next try.
      mu_.AwaitWithTimeout(
          failed ? absl::Condition(this, &JobLogShipper::Stopping) : absl::Condition(this, &JobLogShipper::ReadyToSend),
          limits_.interval);
      stopping = stopping_;
      if (!TakeBatch(&batch)) {
        if (stopping) return;
        continue;
      }
      if (stopping && absl::Now() > stop_deadline_) {
        dropped_ += batch.lines_size() + static_cast<int64_t>(queue_.size());
        queue_.clear();
        return;
      }
    }
    // Once stopping, the wait above ends at once: a coordinator that refuses at once is tried
    // again a little later, not in a busy loop, until the deadline.
    if (failed && stopping) absl::SleepFor(absl::Milliseconds(50));
    failed = !SendOrRequeue(std::move(batch));
  }
}

void JobLogShipper::Stop(absl::Duration deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_deadline_ = absl::Now() + deadline;
    }
  }
  if (thread_.joinable()) thread_.join();
}

int64_t JobLogShipper::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

int64_t JobLogShipper::sent() const {
  absl::MutexLock lock(&mu_);
  return sent_;
}

}  // namespace gradsync::worker
