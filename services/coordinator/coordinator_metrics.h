// The coordinator's Prometheus metrics, computed from its state at scrape time:
//   gradsync_jobs{state}                       gauge: jobs in each state
//   gradsync_workers{state="idle"|"assigned"}  gauge: registered workers
//   gradsync_workers_lost_total                counter: dropped for missed heartbeats
//   gradsync_job_info{training_job,state,reason}   1 per job not ended, or ended within a day
//   gradsync_job_stalls_total{training_job}    counter: stalls found, for the jobs of gradsync_job_info
//   gradsync_job_restarts_total{training_job}  counter: restarts after failures
//   gradsync_job_recoveries_total{training_job,resumed="live"|"checkpoint"}   counter: recoveries
//   gradsync_job_steps_lost_total, gradsync_job_recovery_seconds_total{training_job}   what they cost
//   gradsync_job_running{training_job}         1 while the job is RUNNING
//   gradsync_checkpoints_total, gradsync_checkpoint_bytes_total{training_job}   counters
//   gradsync_checkpoint_duration_seconds, gradsync_checkpoint_size_bytes       the last one
//   gradsync_checkpoint_last_commit_timestamp_seconds{training_job}            when it committed
#pragma once

#include <vector>

#include "coordinator.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace gradsync::coordinator {

class CoordinatorMetrics : public prometheus::Collectable {
 public:
  // `coordinator` must outlive this collectable.
  explicit CoordinatorMetrics(Coordinator* coordinator) : coordinator_(coordinator) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  Coordinator* coordinator_;
};

}  // namespace gradsync::coordinator
