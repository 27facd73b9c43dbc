#include "worker_metrics.h"

#include "absl/strings/str_cat.h"

namespace gradsync::worker {
namespace {

// From 100 us to about a minute, a factor of 2.5 apart.
prometheus::Histogram::BucketBoundaries DurationBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double v = 1e-4; v < 60; v *= 2.5) b.push_back(v);
  return b;
}

}  // namespace

WorkerMetrics::WorkerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      step_(prometheus::BuildHistogram()
                .Name("gradsync_worker_step_duration_seconds")
                .Help("This rank's optimizer step time.")
                .Register(*registry_)),
      compute_(prometheus::BuildHistogram()
                   .Name("gradsync_worker_compute_seconds")
                   .Help("This rank's forward and backward time per step.")
                   .Register(*registry_)),
      exposed_(prometheus::BuildHistogram()
                   .Name("gradsync_worker_exposed_communication_seconds")
                   .Help("How long this rank's optimizer waited for gradients after backward ended.")
                   .Register(*registry_)),
      bucket_(prometheus::BuildHistogram()
                  .Name("gradsync_worker_bucket_allreduce_seconds")
                  .Help("All-reduce time of each gradient bucket on this rank.")
                  .Register(*registry_)),
      rendezvous_(prometheus::BuildGauge()
                      .Name("gradsync_worker_rendezvous_seconds")
                      .Help("Time this rank took to form its communicator in the last generation.")
                      .Register(*registry_)),
      steps_(prometheus::BuildCounter()
                 .Name("gradsync_worker_steps_total")
                 .Help("Optimizer steps this rank completed.")
                 .Register(*registry_)),
      memory_(prometheus::BuildGauge()
                  .Name("gradsync_worker_memory_bytes")
                  .Help("Bytes this rank holds for its parameters, gradients and optimizer state (kind), where it "
                        "computes.")
                  .Register(*registry_)),
      peak_memory_(prometheus::BuildGauge()
                       .Name("gradsync_worker_peak_memory_bytes")
                       .Help("This rank's peak memory: the process's resident set (kind rss) since training "
                             "started; on a GPU the most device memory seen in use (kind device).")
                       .Register(*registry_)) {}

void WorkerMetrics::RecordStep(const v1::StepReport& r) {
  const prometheus::Labels labels = {{"training_job", r.job_id()}, {"rank", absl::StrCat(r.rank())}};
  step_.Add(labels, DurationBuckets()).Observe(r.step_seconds());
  compute_.Add(labels, DurationBuckets()).Observe(r.compute_seconds());
  exposed_.Add(labels, DurationBuckets()).Observe(r.exposed_communication_seconds());
  steps_.Add(labels).Increment();
  for (const v1::BucketTiming& b : r.buckets()) {
    prometheus::Labels l = labels;
    l["bucket"] = absl::StrCat(b.index());
    bucket_.Add(l, DurationBuckets()).Observe(b.done_seconds() - b.started_seconds());
  }
  if (r.has_memory()) RecordMemory(labels, r.memory());
}

void WorkerMetrics::RecordMemory(const prometheus::Labels& labels, const v1::RankMemory& m) {
  auto set = [&labels](prometheus::Family<prometheus::Gauge>& family, const char* kind, int64_t bytes) {
    prometheus::Labels l = labels;
    l["kind"] = kind;
    family.Add(l).Set(static_cast<double>(bytes));
  };
  set(memory_, "params", m.param_bytes());
  set(memory_, "grads", m.grad_bytes());
  set(memory_, "optimizer", m.optimizer_bytes());
  set(peak_memory_, "rss", m.peak_rss_bytes());
  if (m.peak_device_bytes() > 0) set(peak_memory_, "device", m.peak_device_bytes());
}

void WorkerMetrics::RecordRendezvous(const std::string& job, int rank, double seconds) {
  rendezvous_.Add({{"training_job", job}, {"rank", absl::StrCat(rank)}}).Set(seconds);
}

}  // namespace gradsync::worker
