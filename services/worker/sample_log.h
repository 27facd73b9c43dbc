// A data audit trail: one line per optimizer step with the sample indices this rank trains on,
// written and flushed as the step begins, before its collectives (TrainHooks::on_samples), so that
// it survives a kill -9 of the worker and every step that completed on any rank is in every rank's
// trail; a step that failed is superseded by the next generation's line for it. Enabled with the
// worker's --sample_log_dir; the recovery tests use it to prove exact-once data coverage.
//
// File: DIR/<job>.g<generation>.r<rank>.samples. Line: "<step> <epoch> <cursor> <index>...", where
// step counts from 1, (epoch, cursor) is the data position the step started at, and padding
// slots are left out.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/ddp/sampler.h"

namespace gradsync::worker {

class SampleLog {
 public:
  static absl::StatusOr<std::unique_ptr<SampleLog>> Open(const std::string& dir, const std::string& job_id,
                                                         int generation, int rank);
  ~SampleLog();

  void Write(int64_t step, const ddp::Position& from, const ddp::StepShard& shard);

 private:
  explicit SampleLog(std::FILE* file) : file_(file) {}
  std::FILE* file_;
};

}  // namespace gradsync::worker
