#include "training_metrics.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/labels.h"

namespace gradsync::metrics {
namespace {

// Steps of small CPU models take milliseconds, large GPU models tens of seconds.
const prometheus::Histogram::BucketBoundaries kStepBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                              1,     2.5,  5,     10,   30,  60};
// All-reduce time per step: from sub-millisecond loopback up to a stalled network.
const prometheus::Histogram::BucketBoundaries kCommunicationBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                       0.1,    0.25,  0.5,    1,     2.5,  5,     10};

template <typename T>
prometheus::Family<T>& Build(prometheus::detail::Builder<T> builder, prometheus::Registry& registry,
                             const std::string& name, const std::string& help) {
  return builder.Name(name).Help(help).Register(registry);
}

// A histogram's series: one per bucket, +Inf, _sum and _count.
constexpr size_t HistogramSeries(size_t boundaries) { return boundaries + 3; }

int64_t BucketBytes(const v1::StepReport& r) {
  int64_t bytes = 0;
  for (const v1::BucketTiming& b : r.buckets()) bytes += b.bytes();
  return bytes;
}

}  // namespace

// The series of one rank of one job, kept so they can be removed when the job is forgotten.
struct TrainingMetrics::RankHandles {
  prometheus::Gauge* loss;
  prometheus::Histogram* step_duration;
  prometheus::Histogram* allreduce_duration;
  prometheus::Histogram* exposed_communication;
  prometheus::Counter* allreduce_bytes;
  prometheus::Counter* stragglers;
  // Null until the rank reports its memory (the device peak: until it reports one).
  prometheus::Gauge* param_bytes = nullptr;
  prometheus::Gauge* grad_bytes = nullptr;
  prometheus::Gauge* optimizer_bytes = nullptr;
  prometheus::Gauge* peak_rss_bytes = nullptr;
  prometheus::Gauge* peak_device_bytes = nullptr;
};

struct TrainingMetrics::JobHandles {
  prometheus::Gauge* loss;
  prometheus::Gauge* step;
  prometheus::Gauge* generation;
  prometheus::Counter* samples;
  prometheus::Counter* tokens;
  prometheus::Gauge* tokens_per_second;
  prometheus::Histogram* step_duration;
  prometheus::Gauge* grad_norm;
  prometheus::Gauge* learning_rate;
  prometheus::Counter* partial_steps;
  prometheus::Counter* reports;
  prometheus::Counter* late_reports;
  prometheus::Counter* duplicate_reports;
  std::map<int32_t, RankHandles> ranks;
  // The newest (generation, step) published: the gauges follow it, not steps published late.
  std::pair<int32_t, int64_t> newest{-1, -1};
  // Null until the job's first validation loss; then the newest step that carried one.
  prometheus::Gauge* validation_loss = nullptr;
  std::pair<int32_t, int64_t> newest_validation{-1, -1};
};

// Job: 6 gauges, 6 counters, the step-time histogram and the validation loss.
const size_t TrainingMetrics::kJobSeries = 6 + 6 + HistogramSeries(kStepBuckets.size()) + 1;
// Rank: the loss, the step-time and two communication histograms, 2 counters, 5 memory gauges.
const size_t TrainingMetrics::kRankSeries =
    1 + HistogramSeries(kStepBuckets.size()) + 2 * HistogramSeries(kCommunicationBuckets.size()) + 2 + 5;

TrainingMetrics::TrainingMetrics(size_t max_series)
    : max_series_(max_series),
      registry_(std::make_shared<prometheus::Registry>()),
      loss_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_loss",
                  "Loss of the newest step, mean over ranks.")),
      step_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_step", "Newest step reduced across ranks.")),
      generation_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_generation",
                        "Newest generation (restart count + 1) that reported.")),
      samples_(Build(prometheus::BuildCounter(), *registry_, "gradsync_train_samples_total",
                     "Samples trained, summed over ranks.")),
      tokens_(Build(prometheus::BuildCounter(), *registry_, "gradsync_train_tokens_total",
                    "Tokens trained, summed over ranks.")),
      tokens_per_second_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_tokens_per_second",
                               "Tokens of the newest step over its slowest rank's step time.")),
      step_duration_(Build(prometheus::BuildHistogram(), *registry_, "gradsync_train_step_duration_seconds",
                           "Step time of the slowest rank, per step.")),
      grad_norm_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_grad_norm",
                       "Global gradient norm of the newest step.")),
      learning_rate_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_learning_rate",
                           "Learning rate of the newest step.")),
      validation_loss_(Build(prometheus::BuildGauge(), *registry_, "gradsync_validation_loss",
                             "Exact mean loss over the job's validation set after the newest evaluated step "
                             "(every rank's share all-reduced).")),
      partial_steps_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_partial_steps_total",
                           "Steps published without every rank's report (timed out).")),
      reports_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_reports_total",
                     "Step reports received, duplicates and late ones included.")),
      late_reports_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_late_reports_total",
                          "Step reports dropped because their step was already published.")),
      duplicate_reports_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_duplicate_reports_total",
                               "Step reports ignored because the same rank already reported the step.")),
      rank_loss_(Build(prometheus::BuildGauge(), *registry_, "gradsync_train_rank_loss",
                       "Loss of the rank's newest reported step, over its own samples.")),
      rank_step_duration_(Build(prometheus::BuildHistogram(), *registry_, "gradsync_train_rank_step_duration_seconds",
                                "Step time of the rank.")),
      allreduce_duration_(Build(prometheus::BuildHistogram(), *registry_, "gradsync_allreduce_duration_seconds",
                                "Time the rank spent in gradient all-reduce per step.")),
      exposed_communication_(Build(prometheus::BuildHistogram(), *registry_, "gradsync_exposed_communication_seconds",
                                   "Time the rank waited for communication after backward ended, per step.")),
      allreduce_bytes_(Build(prometheus::BuildCounter(), *registry_, "gradsync_allreduce_bytes_total",
                             "Bytes of gradient buckets the rank all-reduced.")),
      stragglers_(Build(prometheus::BuildCounter(), *registry_, "gradsync_straggler_total",
                        "Steps in which the rank was slower than the median rank by the straggler factor.")),
      rank_memory_(Build(prometheus::BuildGauge(), *registry_, "gradsync_rank_memory_bytes",
                         "Bytes the rank holds for its parameters, gradients and optimizer state (kind), where it "
                         "computes, at its newest report.")),
      rank_peak_memory_(Build(prometheus::BuildGauge(), *registry_, "gradsync_rank_peak_memory_bytes",
                              "The rank's peak memory: its process's resident set since training started (kind rss); "
                              "on a GPU the most device memory seen in use (kind device).")),
      invalid_reports_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_invalid_reports_total",
                             "Step reports rejected as malformed.")
                           .Add({})),
      refused_reports_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_refused_reports_total",
                             "Step reports refused because their job's or rank's series would pass --max_series.")
                           .Add({})),
      store_flushes_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_store_flushes_total",
                           "Batches of series changes committed to the series database (--state_dir).")
                         .Add({})),
      store_write_errors_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_store_write_errors_total",
                                "Batches of series changes the series database refused; the jobs they held are "
                                "written whole at the next flush.")
                              .Add({})),
      store_expired_jobs_(Build(prometheus::BuildCounter(), *registry_, "gradsync_metrics_store_expired_jobs_total",
                                "Jobs deleted from the series database after --retention without a report.")
                              .Add({})) {}

TrainingMetrics::~TrainingMetrics() = default;

absl::Status TrainingMetrics::CheckRoomFor(const std::string& job_id, int32_t rank) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  const size_t needed = it == jobs_.end() ? kJobSeries + kRankSeries
                                          : (it->second->ranks.contains(rank) ? 0 : kRankSeries);
  if (HasRoom(needed)) return absl::OkStatus();
  refused_reports_.Increment();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the metrics service holds ", series_, " of its ", max_series_, " Prometheus series (--max_series; a job takes ",
      kJobSeries, ", each of its ranks ", kRankSeries, "): a report needing ", needed,
      " more is refused until an idle job is forgotten"));
}

TrainingMetrics::JobHandles* TrainingMetrics::Job(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) return it->second.get();
  if (!HasRoom(kJobSeries)) return nullptr;
  series_ += kJobSeries;
  const prometheus::Labels l = {{"training_job", job_id}};
  auto job = std::make_unique<JobHandles>(JobHandles{&loss_.Add(l),
                                                     &step_.Add(l),
                                                     &generation_.Add(l),
                                                     &samples_.Add(l),
                                                     &tokens_.Add(l),
                                                     &tokens_per_second_.Add(l),
                                                     &step_duration_.Add(l, kStepBuckets),
                                                     &grad_norm_.Add(l),
                                                     &learning_rate_.Add(l),
                                                     &partial_steps_.Add(l),
                                                     &reports_.Add(l),
                                                     &late_reports_.Add(l),
                                                     &duplicate_reports_.Add(l),
                                                     {},
                                                     {-1, -1},
                                                     nullptr,
                                                     {-1, -1}});
  return jobs_.emplace(job_id, std::move(job)).first->second.get();
}

TrainingMetrics::RankHandles* TrainingMetrics::Rank(JobHandles& job, const std::string& job_id, int32_t rank) {
  auto it = job.ranks.find(rank);
  if (it != job.ranks.end()) return &it->second;
  if (!HasRoom(kRankSeries)) return nullptr;
  series_ += kRankSeries;
  const prometheus::Labels l = {{"training_job", job_id}, {"rank", absl::StrCat(rank)}};
  return &job.ranks
              .emplace(rank, RankHandles{&rank_loss_.Add(l), &rank_step_duration_.Add(l, kStepBuckets),
                                         &allreduce_duration_.Add(l, kCommunicationBuckets),
                                         &exposed_communication_.Add(l, kCommunicationBuckets),
                                         &allreduce_bytes_.Add(l), &stragglers_.Add(l)})
              .first->second;
}

void TrainingMetrics::RecordReport(const v1::StepReport& report, telemetry::ReportOutcome outcome) {
  absl::MutexLock lock(&mu_);
  JobHandles* job = Job(report.job_id());
  if (job == nullptr) return;  // only when reports raced for the last series
  job->reports->Increment();
  switch (outcome) {
    case telemetry::ReportOutcome::kDuplicate: job->duplicate_reports->Increment(); return;
    case telemetry::ReportOutcome::kLate: job->late_reports->Increment(); return;
    case telemetry::ReportOutcome::kAccepted: break;
  }
  RankHandles* rank = Rank(*job, report.job_id(), report.rank());
  if (rank == nullptr) return;
  rank->loss->Set(report.loss());
  rank->step_duration->Observe(report.step_seconds());
  rank->allreduce_duration->Observe(report.communication_seconds());
  rank->exposed_communication->Observe(report.exposed_communication_seconds());
  rank->allreduce_bytes->Increment(static_cast<double>(BucketBytes(report)));
  if (report.has_memory()) RecordMemory(*rank, report);
}

void TrainingMetrics::RecordMemory(RankHandles& rank, const v1::StepReport& report) {
  const v1::RankMemory& m = report.memory();
  auto gauge = [&](prometheus::Family<prometheus::Gauge>& family, prometheus::Gauge*& g, const char* kind) {
    if (g == nullptr)
      g = &family.Add({{"training_job", report.job_id()}, {"rank", absl::StrCat(report.rank())}, {"kind", kind}});
    return g;
  };
  gauge(rank_memory_, rank.param_bytes, "params")->Set(static_cast<double>(m.param_bytes()));
  gauge(rank_memory_, rank.grad_bytes, "grads")->Set(static_cast<double>(m.grad_bytes()));
  gauge(rank_memory_, rank.optimizer_bytes, "optimizer")->Set(static_cast<double>(m.optimizer_bytes()));
  gauge(rank_peak_memory_, rank.peak_rss_bytes, "rss")->Set(static_cast<double>(m.peak_rss_bytes()));
  if (m.peak_device_bytes() > 0) {
    gauge(rank_peak_memory_, rank.peak_device_bytes, "device")->Set(static_cast<double>(m.peak_device_bytes()));
  }
}

void TrainingMetrics::RecordInvalidReport() { invalid_reports_.Increment(); }

void TrainingMetrics::RecordStoreFlush(bool ok) { (ok ? store_flushes_ : store_write_errors_).Increment(); }

void TrainingMetrics::RecordExpiredJobs(size_t n) { store_expired_jobs_.Increment(static_cast<double>(n)); }

void TrainingMetrics::RecordStep(const v1::ReducedStep& step) {
  absl::MutexLock lock(&mu_);
  JobHandles* found = Job(step.job_id());
  if (found == nullptr) return;
  JobHandles& job = *found;
  job.samples->Increment(static_cast<double>(step.samples()));
  job.tokens->Increment(static_cast<double>(step.tokens()));
  job.step_duration->Observe(step.step_seconds());
  if (step.partial()) job.partial_steps->Increment();
  for (int32_t r : step.straggler_ranks()) {
    if (RankHandles* rank = Rank(job, step.job_id(), r); rank != nullptr) rank->stragglers->Increment();
  }
  const std::pair<int32_t, int64_t> key{step.generation(), step.step()};
  if (step.has_validation_loss() && key >= job.newest_validation) {
    if (job.validation_loss == nullptr) job.validation_loss = &validation_loss_.Add({{"training_job", step.job_id()}});
    job.validation_loss->Set(step.validation_loss());
    job.newest_validation = key;
  }
  if (key < job.newest) return;
  job.newest = key;
  job.loss->Set(step.loss());
  job.step->Set(static_cast<double>(step.step()));
  job.generation->Set(step.generation());
  job.tokens_per_second->Set(step.tokens_per_second());
  job.grad_norm->Set(step.grad_norm());
  job.learning_rate->Set(step.learning_rate());
}

void TrainingMetrics::ForgetJob(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  JobHandles& job = *it->second;
  for (auto& [rank, r] : job.ranks) {
    rank_loss_.Remove(r.loss);
    rank_step_duration_.Remove(r.step_duration);
    allreduce_duration_.Remove(r.allreduce_duration);
    exposed_communication_.Remove(r.exposed_communication);
    allreduce_bytes_.Remove(r.allreduce_bytes);
    stragglers_.Remove(r.stragglers);
    for (prometheus::Gauge* g : {r.param_bytes, r.grad_bytes, r.optimizer_bytes}) {
      if (g != nullptr) rank_memory_.Remove(g);
    }
    for (prometheus::Gauge* g : {r.peak_rss_bytes, r.peak_device_bytes}) {
      if (g != nullptr) rank_peak_memory_.Remove(g);
    }
  }
  loss_.Remove(job.loss);
  step_.Remove(job.step);
  generation_.Remove(job.generation);
  samples_.Remove(job.samples);
  tokens_.Remove(job.tokens);
  tokens_per_second_.Remove(job.tokens_per_second);
  step_duration_.Remove(job.step_duration);
  grad_norm_.Remove(job.grad_norm);
  learning_rate_.Remove(job.learning_rate);
  if (job.validation_loss != nullptr) validation_loss_.Remove(job.validation_loss);
  partial_steps_.Remove(job.partial_steps);
  reports_.Remove(job.reports);
  late_reports_.Remove(job.late_reports);
  duplicate_reports_.Remove(job.duplicate_reports);
  series_ -= kJobSeries + kRankSeries * job.ranks.size();
  jobs_.erase(it);
}

}  // namespace gradsync::metrics
