// The worker's own Prometheus metrics, for its rank's view of each step:
//   gradsync_worker_step_duration_seconds{training_job,rank}            histogram
//   gradsync_worker_compute_seconds{training_job,rank}                  histogram
//   gradsync_worker_exposed_communication_seconds{training_job,rank}    histogram
//   gradsync_worker_bucket_allreduce_seconds{training_job,rank,bucket}  histogram
//   gradsync_worker_rendezvous_seconds{training_job,rank}               gauge (the last one)
//   gradsync_worker_steps_total{training_job,rank}                      counter
//   gradsync_worker_memory_bytes{training_job,rank,kind}                gauge: kind params, grads,
//                                                                       optimizer (v1::RankMemory)
//   gradsync_worker_peak_memory_bytes{training_job,rank,kind}           gauge: kind rss; device on a
//                                                                       GPU rank
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/synchronization/mutex.h"
#include "gradsync/v1/metrics.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/labels.h"
#include "prometheus/registry.h"

namespace gradsync::worker {

class WorkerMetrics {
 public:
  WorkerMetrics();
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // The report's timings, and its memory when it carries one.
  void RecordStep(const v1::StepReport& report);
  void RecordRendezvous(const std::string& job, int rank, double seconds);

 private:
  void RecordMemory(const prometheus::Labels& labels, const v1::RankMemory& memory);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& step_;
  prometheus::Family<prometheus::Histogram>& compute_;
  prometheus::Family<prometheus::Histogram>& exposed_;
  prometheus::Family<prometheus::Histogram>& bucket_;
  prometheus::Family<prometheus::Gauge>& rendezvous_;
  prometheus::Family<prometheus::Counter>& steps_;
  prometheus::Family<prometheus::Gauge>& memory_;
  prometheus::Family<prometheus::Gauge>& peak_memory_;
};

}  // namespace gradsync::worker
