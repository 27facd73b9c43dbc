// How the CLI shows jobs: live progress, events, the end-of-run summary (text or JSON), tables.
#pragma once

#include <cstdio>
#include <string>

#include "gradsync/v1/job.pb.h"

namespace gradsync::cli {

// Prints new events and progress of a watched job to `out`: on a terminal a progress bar
// redrawn in place, otherwise one line per reported step.
class ProgressView {
 public:
  explicit ProgressView(FILE* out);
  void Update(const v1::Job& job);
  // Ends an in-place line so later output starts clean.
  void Finish();

 private:
  FILE* out_;
  bool tty_;
  int events_shown_ = 0;
  int64_t last_step_ = -1;
  bool line_open_ = false;
};

// Multi-line human summary of a finished job.
std::string SummaryText(const v1::Job& job);

// One JSON object: name, id, state, stateReason, globalStep, initialLoss, finalLoss, paramDigest,
// weightsPath, samplesPerSecond, tokensPerSecond, worldSize, trainSeconds (+ `extra` fields).
std::string SummaryJson(const v1::Job& job, const std::string& log_dir = "");

// A job as protobuf JSON.
std::string JobJson(const v1::Job& job);

// One line per job: id, state, step/total, loss, name, reason.
std::string JobTable(const v1::ListJobsResponse& jobs);

}  // namespace gradsync::cli
