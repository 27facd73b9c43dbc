// A script rank's link to gradsync, from inside its child process: the rank's context and the
// worker's credentials its worker left in the runtime directory (gradsync/v1/script.proto), the
// coordinator as that worker (epoch plans, checkpoint reports, the rendezvous of an exchange),
// the metrics service (step reports), and progress.json for the worker's heartbeat.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "exchange.h"
#include "gradsync/telemetry/metrics_reporter.h"
#include "gradsync/v1/coordinator.grpc.pb.h"
#include "gradsync/v1/script.pb.h"

namespace gradsync::python {

// What a step report carries besides the rank's identity (v1::StepReport's fields).
struct StepFigures {
  int64_t step = 0;
  int epoch = 0;
  double loss = 0;
  int64_t samples = 0;
  int64_t tokens = 0;
  double step_seconds = 0;
  double learning_rate = 0;
  double grad_norm = 0;
};

class RankLink {
 public:
  // Reads `runtime_dir` (GRADSYNC_RUNTIME_DIR). FAILED_PRECONDITION naming the file when it is not
  // a script rank's runtime directory.
  static absl::StatusOr<std::unique_ptr<RankLink>> Open(const std::string& runtime_dir);
  ~RankLink();

  const v1::ScriptRankContext& context() const { return context_; }
  const v1::Assignment& assignment() const { return context_.assignment(); }
  int rank() const { return assignment().rank(); }
  int world_size() const { return assignment().world_size(); }

  // The seed of `epoch`'s order, from the coordinator's epoch plan.
  absl::StatusOr<uint64_t> EpochSeed(int epoch);
  // Where this rank writes its part of the checkpoint after `step` steps.
  std::string CheckpointDir(int64_t step) const;
  // Reports this rank's part, the file at `path` (inside CheckpointDir(step)), with its size and
  // checksum and the sampler's position after the step. True once the coordinator committed the
  // checkpoint (this report was the last part).
  absl::StatusOr<bool> ReportCheckpoint(int64_t step, int epoch, int64_t cursor, const std::string& path,
                                        double initial_loss);
  // Queues a step report for the metrics service (never blocks; dropped without one), and writes
  // progress.json for the worker's heartbeat.
  absl::Status ReportStep(const StepFigures& figures, double initial_loss);
  // A communicator among the generation's ranks, met through the coordinator under `name` (every
  // rank must connect the same names in the same order). `device` -1: over host memory; a CUDA
  // ordinal: over that GPU's memory, by the placement's backend (NCCL, or Gloo staged through the
  // host), collectives waiting for `stream`.
  absl::StatusOr<std::shared_ptr<Exchange>> ConnectExchange(const std::string& name, int device = -1,
                                                            uintptr_t stream = 0);

 private:
  RankLink(std::string dir, v1::ScriptRankContext context);
  // Every 200 ms: the collectives the exchanges issued and finished, into the runtime directory's
  // "exchange" file ("<issued> <finished>"), which the worker's heartbeat carries to the
  // coordinator's hang diagnosis. On its own thread, so a rank stuck in Python still reports.
  void PublishCounters();

  const std::string dir_;
  const v1::ScriptRankContext context_;
  std::shared_ptr<v1::CoordinatorService::Stub> stub_;
  std::unique_ptr<telemetry::MetricsReporter> metrics_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::vector<std::weak_ptr<Exchange>> exchanges_;
  std::thread publisher_;  // last: starts once the members above exist
};

}  // namespace gradsync::python
