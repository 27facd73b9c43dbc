#include "job_logs.h"

#include <algorithm>

namespace gradsync::coordinator {

void JobLogStore::DropOldest(JobLines* job) {
  const size_t cost = Cost(job->lines.front());
  job->bytes -= cost;
  total_bytes_ -= cost;
  job->lines.pop_front();
  ++job->dropped;
}

void JobLogStore::Append(const v1::ReportLogsRequest& batch, absl::Time now) {
  absl::MutexLock lock(&mu_);
  JobLines& job = jobs_[batch.job_id()];
  job.dropped += std::max<int64_t>(0, batch.dropped());
  job.last_append = now;
  for (const v1::LogLine& line : batch.lines()) {
    v1::LogLine kept = line;
    // The coordinator knows who reported it: the rank and generation are the batch's.
    kept.set_rank(batch.rank());
    kept.set_generation(batch.generation());
    kept.set_seq(++job.last_seq);
    const size_t cost = Cost(kept);
    job.bytes += cost;
    total_bytes_ += cost;
    job.lines.push_back(std::move(kept));
    while (job.bytes > bounds_.max_job_bytes && !job.lines.empty()) DropOldest(&job);
  }
  EnforceTotal();
}

void JobLogStore::EnforceTotal() {
  while (total_bytes_ > bounds_.max_total_bytes) {
    JobLines* oldest = nullptr;
    for (auto& [id, job] : jobs_) {
      if (!job.lines.empty() && (oldest == nullptr || job.last_append < oldest->last_append)) oldest = &job;
    }
    if (oldest == nullptr) return;
    DropOldest(oldest);
  }
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
