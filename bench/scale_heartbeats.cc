// The heartbeat half of `gradsync-bench scale`: the fleet grows step by step; each step measures
// heartbeat latency and what the coordinator lost.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "latency_stats.h"
#include "proc_stats.h"
#include "scale_bench.h"
#include "sim_fleet.h"

namespace gradsync::bench {
namespace {

struct Step {
  int workers = 0;
  double register_per_s = 0;
  LatencySummary latency;
  absl::Duration measured;
  double beats_per_s = 0;
  // Lost workers: by the coordinator's log (-1: not ours), and as the fleet saw it.
  int lost_in_log = -1;
  int64_t reregister = 0, streams_ended = 0, errors = 0;
  int coordinator_workers = -1;  // by its /metrics; -1: unknown
  // CPU as a share of one core over the measurement; -1: not ours.
  double coordinator_cpu = -1, bench_cpu = -1;
  int64_t coordinator_rss = 0;
  int coordinator_threads = 0;
  absl::Duration max_send_lag;

  bool lost_any() const { return lost_in_log > 0 || reregister > 0 || streams_ended > 0; }
  bool MeetsGoal() const { return !lost_any() && errors == 0 && latency.p99_ms < absl::ToDoubleMilliseconds(kGoalP99); }
};

// CPU used between two readings, as a share of one core; -1 when either is missing.
double CpuShare(const absl::StatusOr<ProcStats>& before, const absl::StatusOr<ProcStats>& after, absl::Duration d) {
  if (!before.ok() || !after.ok()) return -1;
  return (after->cpu_seconds - before->cpu_seconds) / absl::ToDoubleSeconds(d);
}

// Grows the fleet to `workers` and measures one step.
absl::StatusOr<Step> RunStep(const ScaleTarget& target, SimulatedFleet& fleet, int workers,
                             const ScaleOptions& options) {
  Step step;
  step.workers = workers;
  const int added = workers - fleet.live();
  const absl::Time start = absl::Now();
  if (absl::Status s = fleet.Grow(added); !s.ok()) return s;
  step.register_per_s = added / std::max(1e-3, absl::ToDoubleSeconds(absl::Now() - start));
  absl::SleepFor(options.settle);
  fleet.TakeLatencies();
  fleet.TakeMaxSendLag();
  const auto coord_before = ReadProcStats(target.pid());
  const auto self_before = ReadProcStats(::getpid());
  const absl::Time measure_start = absl::Now();
  // From registration to the end, a step outlasts the lease, so that one the coordinator let
  // expire shows.
  absl::SleepFor(std::max(options.measure, fleet.lease_timeout() + absl::Seconds(1) - options.settle));
  const absl::Duration measured = step.measured = absl::Now() - measure_start;
  const auto coord_after = ReadProcStats(target.pid());
  const auto self_after = ReadProcStats(::getpid());
  std::vector<double> samples = fleet.TakeLatencies();
  step.latency = Summarize(samples);
  step.beats_per_s = static_cast<double>(step.latency.count) / absl::ToDoubleSeconds(measured);
  step.max_send_lag = fleet.TakeMaxSendLag();
  const FleetCounters after = fleet.counters();
  step.reregister = after.reregister;
  step.streams_ended = after.streams_ended;
  step.errors = after.heartbeat_errors;
  step.lost_in_log = target.LostWorkers();
  step.coordinator_workers = target.RegisteredWorkers().value_or(-1);
  step.coordinator_cpu = CpuShare(coord_before, coord_after, measured);
  step.bench_cpu = CpuShare(self_before, self_after, measured);
  if (coord_after.ok()) {
    step.coordinator_rss = coord_after->rss_bytes;
    step.coordinator_threads = coord_after->threads;
  }
  return step;
}

std::string Percent(double share) { return share < 0 ? "-" : absl::StrFormat("%.0f%%", 100 * share); }
std::string Count(int n) { return n < 0 ? "-" : absl::StrCat(n); }

// What /proc says of the coordinator during a step; empty when it is not ours.
std::string CoordinatorProcess(const Step& s) {
  if (s.coordinator_cpu < 0) return "";
  return absl::StrFormat(", CPU %s, RSS %.0f MiB, %d threads", Percent(s.coordinator_cpu),
                         static_cast<double>(s.coordinator_rss) / (1 << 20), s.coordinator_threads);
}

void PrintStep(const Step& s) {
  std::printf(
      "workers %6d: registered at %.0f/s; %.0f heartbeats/s over %.0f s, p50 %.1f ms, p99 %.1f ms, max %.1f ms; "
      "lost %s (reregister %lld, streams ended %lld, errors %lld); coordinator counts %s%s; bench CPU %s, send "
      "lag max %.1f ms%s\n",
      s.workers, s.register_per_s, s.beats_per_s, absl::ToDoubleSeconds(s.measured), s.latency.p50_ms, s.latency.p99_ms,
      s.latency.max_ms, Count(s.lost_in_log).c_str(), static_cast<long long>(s.reregister),
      static_cast<long long>(s.streams_ended), static_cast<long long>(s.errors), Count(s.coordinator_workers).c_str(),
      CoordinatorProcess(s).c_str(), Percent(s.bench_cpu).c_str(), absl::ToDoubleMilliseconds(s.max_send_lag),
      s.MeetsGoal() ? "" : "  <- misses the goal");
  std::fflush(stdout);
}

void PrintTable(const std::vector<Step>& steps) {
  std::printf(
      "\n| workers | heartbeats/s | p50 ms | p99 ms | max ms | lost | coordinator CPU | RSS MiB | threads | bench CPU "
      "| goal |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const Step& s : steps) {
    const bool ours = s.coordinator_cpu >= 0;
    const std::string rss = ours ? absl::StrFormat("%.0f", static_cast<double>(s.coordinator_rss) / (1 << 20)) : "-";
    std::printf("| %d | %.0f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s | %s |\n", s.workers, s.beats_per_s,
                s.latency.p50_ms, s.latency.p99_ms, s.latency.max_ms,
                Count(s.lost_in_log < 0 ? static_cast<int>(s.reregister) : s.lost_in_log).c_str(),
                Percent(s.coordinator_cpu).c_str(), rss.c_str(), Count(ours ? s.coordinator_threads : -1).c_str(),
                Percent(s.bench_cpu).c_str(), s.MeetsGoal() ? "met" : "missed");
  }
}

}  // namespace

bool RunHeartbeatSteps(const ScaleTarget& target, const CoordinatorChannels& channels, const ScaleOptions& options) {
  SimulatedFleet fleet(&channels, {.watch_assignments = options.watch_assignments});
  std::vector<Step> steps;
  std::optional<int> best;
  bool clean = true;
  for (int workers : options.workers) {
    absl::StatusOr<Step> step = RunStep(target, fleet, workers, options);
    if (!step.ok()) {
      std::printf("workers %6d: %s\n", workers, step.status().ToString().c_str());
      clean = false;
      break;
    }
    if (steps.empty()) {
      std::printf("heartbeat interval %s, lease %s (from RegisterWorker)\n",
                  absl::FormatDuration(fleet.heartbeat_interval()).c_str(),
                  absl::FormatDuration(fleet.lease_timeout()).c_str());
    }
    PrintStep(*step);
    steps.push_back(*step);
    clean = clean && !step->lost_any() && step->errors == 0;
    if (!step->MeetsGoal()) break;
    best = workers;
  }
  fleet.Stop();
  PrintTable(steps);
  if (best.has_value()) {
    std::printf("\nlargest worker count meeting the goal (heartbeat p99 < %s, no worker lost): %d\n",
                absl::FormatDuration(kGoalP99).c_str(), *best);
  } else {
    std::printf("\nno step met the goal (heartbeat p99 < %s, no worker lost)\n",
                absl::FormatDuration(kGoalP99).c_str());
  }
  return clean;
}

}  // namespace gradsync::bench
