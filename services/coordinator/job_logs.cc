#include "job_logs.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>

#include "google/protobuf/util/time_util.h"
#include "gradsync/core/log.h"
#include "gradsync/core/utf8.h"

namespace gradsync::coordinator {
namespace {

// The range google.protobuf.Timestamp can print: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
constexpr int64_t kMinTimestampSeconds = -62135596800;
constexpr int64_t kMaxTimestampSeconds = 253402300799;

std::string CutValid(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const std::string_view head(text.data(), max_bytes);
  return std::string(head.substr(0, utf8::ValidPrefix(head)));
}

bool ValidTime(const google::protobuf::Timestamp& t) {
  return t.seconds() >= kMinTimestampSeconds && t.seconds() <= kMaxTimestampSeconds && t.nanos() >= 0 &&
         t.nanos() <= 999'999'999;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return b > std::numeric_limits<int64_t>::max() - a ? std::numeric_limits<int64_t>::max() : a + b;
}

}  // namespace

v1::LogLine Kept(const v1::LogLine& line, absl::Time now) {
  v1::LogLine kept;
  *kept.mutable_time() = ValidTime(line.time())
                             ? line.time()
                             : google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
  const std::string& level = line.level();
  kept.set_level(level == "debug" || level == "warning" || level == "error" ? level : "info");
  kept.set_source(CutValid(line.source(), kMaxLogSourceBytes));
  kept.set_message(CutValid(line.message(), kMaxLogMessageBytes));
  return kept;
}

void JobLogStore::DropOldest(JobLines* job) {
  const size_t cost = Cost(job->lines.front());
  job->bytes -= cost;
  total_bytes_ -= cost;
  job->lines.pop_front();
  job->dropped = SaturatingAdd(job->dropped, 1);
}

JobLogStore::JobLogStore(JobLogBounds bounds, std::unique_ptr<JobLogJournal> journal)
    : bounds_(bounds), journal_(std::move(journal)) {
  if (journal_ == nullptr) return;
  absl::StatusOr<std::vector<JournaledJob>> loaded = journal_->Load();
  if (!loaded.ok()) {
    GS_LOG(ERROR) << loaded.status() << "; the job logs start empty";
    return;
  }
  absl::MutexLock lock(&mu_);
  size_t lines = 0;
  for (JournaledJob& stored : *loaded) {
    JobLines& job = jobs_[stored.job_id];
    job.dropped = std::max<int64_t>(0, stored.dropped);
    job.last_append = absl::InfinitePast();
    int64_t seq = 0;
    for (const v1::LogLine& line : stored.lines) {
      // Bounded again as it arrives: the file is read, not trusted.
      v1::LogLine kept = Kept(line, absl::Now());
      kept.set_rank(line.rank());
      kept.set_generation(line.generation());
      kept.set_seq(seq = std::max(seq + 1, line.seq()));
      Add(&job, std::move(kept));
      ++lines;
    }
    job.last_seq = std::max(stored.last_seq, seq);
  }
  EnforceTotal();
  GS_LOG(INFO) << "job logs are kept in " << journal_->path() << " (" << lines << " lines of " << jobs_.size()
               << " jobs read back)";
}

void JobLogStore::Add(JobLines* job, v1::LogLine kept) {
  const size_t cost = Cost(kept);
  job->bytes += cost;
  total_bytes_ += cost;
  job->lines.push_back(std::move(kept));
  while (job->bytes > bounds_.max_job_bytes && !job->lines.empty()) DropOldest(job);
}

void JobLogStore::Append(const v1::ReportLogsRequest& batch, absl::Time now) {
  absl::MutexLock lock(&mu_);
  JobLines& job = jobs_[batch.job_id()];
  job.dropped = SaturatingAdd(job.dropped, std::max<int64_t>(0, batch.dropped()));
  job.last_append = now;
  JobLogChange change{.job_id = batch.job_id()};
  for (const v1::LogLine& line : batch.lines()) {
    v1::LogLine kept = Kept(line, now);
    // The coordinator knows who reported it: the rank and generation are the batch's.
    kept.set_rank(batch.rank());
    kept.set_generation(batch.generation());
    kept.set_seq(++job.last_seq);
    if (journal_ != nullptr) change.added.push_back(kept);
    Add(&job, std::move(kept));
  }
  const std::set<std::string> trimmed = EnforceTotal();
  if (journal_ == nullptr) return;
  // This job, and every other whose oldest lines EnforceTotal dropped.
  std::vector<JobLogChange> changes;
  changes.push_back(std::move(change));
  for (const std::string& id : trimmed) {
    if (id != batch.job_id()) changes.push_back(JobLogChange{.job_id = id});
  }
  for (JobLogChange& c : changes) {
    const JobLines& j = jobs_.at(c.job_id);
    c.last_seq = j.last_seq;
    c.dropped = j.dropped;
    c.first_kept_seq = j.lines.empty() ? j.last_seq + 1 : j.lines.front().seq();
  }
  Journal(std::move(changes));
}

void JobLogStore::Journal(std::vector<JobLogChange> changes) {
  if (absl::Status s = journal_->Write(changes); !s.ok()) {
    // The lines stay served from memory; the next write tries again with what is kept then.
    GS_LOG(ERROR) << s << "; the job logs go on in memory";
  }
}

std::set<std::string> JobLogStore::EnforceTotal() {
  std::set<std::string> trimmed;
  while (total_bytes_ > bounds_.max_total_bytes) {
    decltype(jobs_)::iterator oldest = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      if (!it->second.lines.empty() && (oldest == jobs_.end() || it->second.last_append < oldest->second.last_append)) {
        oldest = it;
      }
    }
    if (oldest == jobs_.end()) break;
    DropOldest(&oldest->second);
    trimmed.insert(oldest->first);
  }
  return trimmed;
}

v1::GetJobLogsResponse JobLogStore::Read(const std::string& job_id, std::optional<int> rank, int64_t after_seq,
                                         int limit) const {
  if (limit <= 0 || limit > kMaxReadLines) limit = kMaxReadLines;
  v1::GetJobLogsResponse out;
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return out;
  const JobLines& job = it->second;
  out.set_last_seq(job.last_seq);
  out.set_dropped(job.dropped);
  // Lines are in seq order: start at the first one after `after_seq`.
  auto first = std::upper_bound(job.lines.begin(), job.lines.end(), after_seq,
                                [](int64_t seq, const v1::LogLine& l) { return seq < l.seq(); });
  for (auto l = first; l != job.lines.end() && out.lines_size() < limit; ++l) {
    if (!rank.has_value() || l->rank() == *rank) *out.add_lines() = *l;
  }
  return out;
}

size_t JobLogStore::total_bytes() const {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

}  // namespace gradsync::coordinator
