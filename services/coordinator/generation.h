// One generation of a job: the gang of workers that runs it from its scheduling until it ends
// (success, a failure, a rescale, a cancel). It owns what lives exactly that long: which worker
// holds which rank, the rendezvous namespace, the checkpoint parts reported so far, the ranks'
// results, and the hang diagnosis. A restart starts a new Generation, so nothing of a failed one
// leaks into the next. Not thread-safe: the coordinator owns it (through its JobRuntime) under its
// lock.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "adoption.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gradsync/v1/job.pb.h"
#include "stall_watch.h"

namespace gradsync::coordinator {

class Generation {
 public:
  // Generation `number` of job `job_id`, scheduled at `start`: rank r runs on worker ranks[r].
  Generation(std::string job_id, int number, std::vector<std::string> ranks, absl::Time start);

  int number() const { return number_; }
  int world_size() const { return static_cast<int>(ranks_.size()); }
  // Worker ids by rank.
  const std::vector<std::string>& ranks() const { return ranks_; }
  absl::Time start() const { return start_; }
  // The dense bf16 peak of the ranks' GPUs added up (FLOP/s), 0 unless every rank runs bf16 on a
  // GPU of known peak; the job's result carries it for MFU.
  double peak_flops() const { return peak_flops_; }
  void set_peak_flops(double flops) { peak_flops_ = flops; }
  // Where its ranks rendezvous in the KvStore; dropped when the generation ends.
  std::string kv_namespace() const;

  // OK when `worker_id` runs `rank` of this generation; PERMISSION_DENIED naming the worker and
  // the rank otherwise (a rank outside the world size included). Reports pass this first.
  absl::Status CheckReporter(const std::string& worker_id, int rank) const;

  // Records rank `part.rank()`'s part of the checkpoint at `part.step()`. The part that completes
  // the set returns the manifest to commit, committed at `now`; parts of that step and of earlier
  // ones are then forgotten. nullopt while parts are missing.
  std::optional<v1::CheckpointManifest> AddCheckpointPart(const v1::ReportCheckpointRequest& part, absl::Time now);

  // Records a rank's successful outcome; true once every rank has reported one.
  bool AddResult(const v1::ReportResultRequest& result);
  // Once every rank reported: the job's result when every rank's parameters have rank 0's digest,
  // else FAILED_PRECONDITION saying which ranks diverged ("replica divergence: ..."). Rank 0's
  // figures, with each rank's memory (its result's first entry) in rank order.
  absl::StatusOr<v1::JobResult> AgreedResult() const;

  // Set when the job checkpoints in order to grow: the commit ends this generation.
  bool scale_up_requested() const { return scale_up_requested_; }
  void RequestScaleUp() { scale_up_requested_ = true; }

  StallWatch& stalls() { return stalls_; }
  const StallWatch& stalls() const { return stalls_; }

  // A generation a previous coordinator scheduled awaits its ranks' return (adoption.h) until
  // EndAdoption; nullptr once adopted, and for a generation this coordinator scheduled.
  Adoption* adoption() { return adoption_.get(); }
  const Adoption* adoption() const { return adoption_.get(); }
  void AwaitAdoption(std::unique_ptr<Adoption> adoption) { adoption_ = std::move(adoption); }
  void EndAdoption() { adoption_.reset(); }

 private:
  std::string job_id_;
  int number_;
  std::vector<std::string> ranks_;
  absl::Time start_;
  double peak_flops_ = 0;
  bool scale_up_requested_ = false;
  // Parts reported per checkpoint step, by rank.
  std::map<int64_t, std::map<int, v1::ReportCheckpointRequest>> checkpoint_parts_;
  std::map<int, v1::ReportResultRequest> results_;
  StallWatch stalls_;
  std::unique_ptr<Adoption> adoption_;
};

}  // namespace gradsync::coordinator
