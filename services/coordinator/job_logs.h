// The job log lines workers ship (logs.proto), held in memory for GetJobLogs and `gradsync logs`.
//
// Every line is bounded as it arrives (`Kept`): its message cut to 2 KiB and its source to 128
// bytes (at a UTF-8 boundary), its level one of debug, info, warning, error (else info), a time
// outside the range a timestamp can print replaced by the time it arrived; a batch's count of
// dropped lines is added without overflow. So no field escapes the byte bounds below, and every
// line read back serialises.
//
// Bounded in bytes (every field of a line): a job keeps at most `max_job_bytes` of its newest
// lines, and all jobs together at most `max_total_bytes`, the job appended to longest ago losing
// its oldest lines first. Every line lost to a bound, and every line a worker reports it dropped,
// is counted in the job's `dropped`. Lines are numbered per job from 1 in arrival order (seq), so
// a reader that follows asks for the lines after the last seq it saw. With a journal
// (job_log_journal.h, the coordinator's --state-dir) every change is written there too and read
// back at start, so a restarted coordinator serves the lines it kept; without one they live in
// memory only (a local cluster's workers also keep them in files).
//
// Thread-safe; its own lock, never the coordinator's.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gradsync/v1/logs.pb.h"
#include "job_log_journal.h"

namespace gradsync::coordinator {

struct JobLogBounds {
  size_t max_job_bytes = size_t{8} << 20;
  size_t max_total_bytes = size_t{128} << 20;
};

// The most bytes a line's message and source keep.
inline constexpr size_t kMaxLogMessageBytes = 2048;
inline constexpr size_t kMaxLogSourceBytes = 128;

// `line` as the store keeps it: fields cut to their bounds, the level and time made valid (`now`
// for a time a timestamp cannot hold).
v1::LogLine Kept(const v1::LogLine& line, absl::Time now);

class JobLogStore {
 public:
  // The most lines one Read returns.
  static constexpr int kMaxReadLines = 5000;

  explicit JobLogStore(JobLogBounds bounds = {}) : bounds_(bounds) {}
  // Keeps every change in `journal` too (when not null), starting from what it holds (within the
  // bounds). A journal that cannot be read or written is logged, and the lines go on in memory.
  JobLogStore(JobLogBounds bounds, std::unique_ptr<JobLogJournal> journal);

  // Appends `batch`'s lines to job `batch.job_id()`, numbering them, and counts its `dropped`.
  // The caller has checked that the reporter holds the rank.
  void Append(const v1::ReportLogsRequest& batch, absl::Time now);

  // Job `job_id`'s lines with seq above `after_seq`, of `rank` when set, oldest first, at most
  // `limit` (kMaxReadLines when 0), with the job's last seq and dropped count. A job with no lines
  // answers an empty response.
  v1::GetJobLogsResponse Read(const std::string& job_id, std::optional<int> rank, int64_t after_seq, int limit) const;

  size_t total_bytes() const;

 private:
  struct JobLines {
    std::deque<v1::LogLine> lines;
    size_t bytes = 0;
    int64_t last_seq = 0;
    int64_t dropped = 0;
    absl::Time last_append;
  };
  static size_t Cost(const v1::LogLine& line) {
    return line.message().size() + line.source().size() + line.level().size() + 64;
  }
  // Drops `job`'s oldest line, counting it.
  void DropOldest(JobLines* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends `kept` (numbered already) to `job`, bounded by max_job_bytes.
  void Add(JobLines* job, v1::LogLine kept) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes what changed for the jobs in `changes` to the journal, if any.
  void Journal(std::vector<JobLogChange> changes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Brings all jobs within max_total_bytes, the least recently appended job first.
  // Returns the ids of the jobs it took lines from.
  std::set<std::string> EnforceTotal() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobLogBounds bounds_;
  std::unique_ptr<JobLogJournal> journal_;
  mutable absl::Mutex mu_;
  std::map<std::string, JobLines> jobs_ ABSL_GUARDED_BY(mu_);
  size_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace gradsync::coordinator
