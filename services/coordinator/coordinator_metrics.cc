#include "coordinator_metrics.h"

#include "absl/strings/ascii.h"

namespace gradsync::coordinator {
namespace {

prometheus::ClientMetric Value(double v, std::vector<prometheus::ClientMetric::Label> labels, bool counter) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  return m;
}

// A reason short enough for a label: its first line, at most 160 bytes (cut at a UTF-8 boundary).
std::string Shortened(const std::string& reason) {
  constexpr size_t kMax = 160;
  std::string out = reason.substr(0, reason.find('\n'));
  if (out.size() <= kMax) return out;
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

// What failures cost each job (RecoveryStats): recoveries by how they resumed, the committed steps
// lost, and the seconds from each failure to the next committed step.
std::vector<prometheus::MetricFamily> RecoveryFamilies(const std::map<std::string, v1::RecoveryStats>& recoveries) {
  prometheus::MetricFamily count{"gradsync_job_recoveries_total",
                                 "Generations a job started after a failure, by where their state came from: "
                                 "live (the survivors' memory) or checkpoint (disk, or the start).",
                                 prometheus::MetricType::Counter,
                                 {}};
  prometheus::MetricFamily lost{"gradsync_job_steps_lost_total",
                                "Committed steps a job's failures threw away (the step in flight not counted).",
                                prometheus::MetricType::Counter,
                                {}};
  prometheus::MetricFamily seconds{"gradsync_job_recovery_seconds_total",
                                   "Seconds from each failure of a job to the next committed step, summed.",
                                   prometheus::MetricType::Counter,
                                   {}};
  for (const auto& [job, r] : recoveries) {
    count.metric.push_back(Value(r.live_recoveries(), {{"training_job", job}, {"resumed", "live"}}, true));
    count.metric.push_back(Value(r.checkpoint_recoveries(), {{"training_job", job}, {"resumed", "checkpoint"}}, true));
    lost.metric.push_back(Value(static_cast<double>(r.steps_lost()), {{"training_job", job}}, true));
    seconds.metric.push_back(Value(r.recovery_seconds(), {{"training_job", job}}, true));
  }
  return {std::move(count), std::move(lost), std::move(seconds)};
}

}  // namespace

std::vector<prometheus::MetricFamily> CoordinatorMetrics::Collect() const {
  const Coordinator::Snapshot s = coordinator_->TakeSnapshot();
  prometheus::MetricFamily jobs{
      "gradsync_jobs", "Jobs known to the coordinator, by state.", prometheus::MetricType::Gauge, {}};
  for (int st = v1::PENDING; st <= v1::CANCELLED; ++st) {
    const auto it = s.jobs_by_state.find(static_cast<v1::JobState>(st));
    jobs.metric.push_back(Value(it == s.jobs_by_state.end() ? 0 : it->second,
                                {{"state", absl::AsciiStrToLower(v1::JobState_Name(st))}}, false));
  }
  prometheus::MetricFamily workers{
      "gradsync_workers", "Registered workers, idle or assigned to a job.", prometheus::MetricType::Gauge, {}};
  workers.metric.push_back(Value(s.idle_workers, {{"state", "idle"}}, false));
  workers.metric.push_back(Value(s.assigned_workers, {{"state", "assigned"}}, false));
  prometheus::MetricFamily restarts{"gradsync_job_restarts_total",
                                    "Generations a job started after its first one (restarts).",
                                    prometheus::MetricType::Counter,
                                    {}};
  for (const auto& [job, n] : s.restarts)
    restarts.metric.push_back(Value(static_cast<double>(n), {{"training_job", job}}, true));
  prometheus::MetricFamily running{"gradsync_job_running",
                                   "1 for each job that is RUNNING (absent otherwise): alerts join on it.",
                                   prometheus::MetricType::Gauge,
                                   {}};
  for (const std::string& job : s.running) running.metric.push_back(Value(1, {{"training_job", job}}, false));
  prometheus::MetricFamily committed{
      "gradsync_checkpoints_total", "Checkpoints committed.", prometheus::MetricType::Counter, {}};
  prometheus::MetricFamily bytes{
      "gradsync_checkpoint_bytes_total", "Bytes of committed checkpoints.", prometheus::MetricType::Counter, {}};
  prometheus::MetricFamily seconds{"gradsync_checkpoint_duration_seconds",
                                   "Time of the last checkpoint, from the step boundary to the commit.",
                                   prometheus::MetricType::Gauge,
                                   {}};
  prometheus::MetricFamily size{
      "gradsync_checkpoint_size_bytes", "Size of the last committed checkpoint.", prometheus::MetricType::Gauge, {}};
  for (const auto& [job, c] : s.checkpoints) {
    committed.metric.push_back(Value(static_cast<double>(c.committed), {{"training_job", job}}, true));
    bytes.metric.push_back(Value(static_cast<double>(c.bytes_total), {{"training_job", job}}, true));
    seconds.metric.push_back(Value(c.last_seconds, {{"training_job", job}}, false));
    size.metric.push_back(Value(static_cast<double>(c.last_bytes), {{"training_job", job}}, false));
  }
  prometheus::MetricFamily last_commit{"gradsync_checkpoint_last_commit_timestamp_seconds",
                                       "When the newest committed checkpoint was committed (Unix seconds).",
                                       prometheus::MetricType::Gauge,
                                       {}};
  for (const auto& [job, c] : s.checkpoints) {
    last_commit.metric.push_back(Value(c.last_commit_time, {{"training_job", job}}, false));
  }
  prometheus::MetricFamily lost{"gradsync_workers_lost_total",
                                "Workers dropped for missed heartbeats since the coordinator started.",
                                prometheus::MetricType::Counter,
                                {}};
  lost.metric.push_back(Value(static_cast<double>(s.workers_lost), {}, true));
  prometheus::MetricFamily info{"gradsync_job_info",
                                "1 for each job not yet ended or ended within a day, labelled with its state "
                                "and the reason for it.",
                                prometheus::MetricType::Gauge,
                                {}};
  for (const Coordinator::Snapshot::JobInfo& j : s.jobs) {
    info.metric.push_back(Value(1,
                                {{"training_job", j.id},
                                 {"state", absl::AsciiStrToLower(v1::JobState_Name(j.state))},
                                 {"reason", Shortened(j.reason)}},
                                false));
  }
  prometheus::MetricFamily stalls{"gradsync_job_stalls_total",
                                  "Stalls found in a job's generations: a rank made no progress for "
                                  "the stall timeout.",
                                  prometheus::MetricType::Counter,
                                  {}};
  for (const auto& [job, n] : s.stalls) {
    stalls.metric.push_back(Value(static_cast<double>(n), {{"training_job", job}}, true));
  }
  std::vector<prometheus::MetricFamily> recovery = RecoveryFamilies(s.recoveries);
  std::vector<prometheus::MetricFamily> out;
  for (auto* f : {&jobs, &workers, &lost, &info, &restarts, &running, &stalls, &committed, &bytes, &seconds, &size,
                  &last_commit, &recovery[0], &recovery[1], &recovery[2]}) {
    out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace gradsync::coordinator
