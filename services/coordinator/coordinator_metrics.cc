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

}  // namespace

std::vector<prometheus::MetricFamily> CoordinatorMetrics::Collect() const {
  const Coordinator::Snapshot s = coordinator_->TakeSnapshot();
  prometheus::MetricFamily jobs{"gradsync_jobs", "Jobs known to the coordinator, by state.",
                                prometheus::MetricType::Gauge, {}};
  for (int st = v1::PENDING; st <= v1::CANCELLED; ++st) {
    const auto it = s.jobs_by_state.find(static_cast<v1::JobState>(st));
    jobs.metric.push_back(Value(it == s.jobs_by_state.end() ? 0 : it->second,
                                {{"state", absl::AsciiStrToLower(v1::JobState_Name(st))}}, false));
  }
  prometheus::MetricFamily workers{"gradsync_workers", "Registered workers, idle or assigned to a job.",
                                   prometheus::MetricType::Gauge, {}};
  workers.metric.push_back(Value(s.idle_workers, {{"state", "idle"}}, false));
  workers.metric.push_back(Value(s.assigned_workers, {{"state", "assigned"}}, false));
  prometheus::MetricFamily restarts{"gradsync_job_restarts_total",
                                    "Generations a job started after its first one (restarts).",
                                    prometheus::MetricType::Counter, {}};
  for (const auto& [job, n] : s.restarts) restarts.metric.push_back(Value(static_cast<double>(n), {{"training_job", job}}, true));
  return {std::move(jobs), std::move(workers), std::move(restarts)};
}

}  // namespace gradsync::coordinator
