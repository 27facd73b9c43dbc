// Bucketed gradient all-reduce overlapped with backward, like PyTorch DDP's reducer.
//
// Parameters are grouped into buckets in reverse order (the order backward produces their
// gradients). A bucket is a contiguous range of the model's gradient buffer, so gradients live
// in bucket memory and nothing is copied. The first bucket is small (first_bucket_mb) so
// communication starts early; the rest are up to bucket_cap_mb. As backward reports parameters
// final (MarkReady), a bucket whose parameters are all final is all-reduced at once on the
// communicator's thread while backward goes on; buckets launch in index order on every rank.
// FinishStep waits for all of them.
//
// The reducer sums. Gradients become the mean over the global batch because each rank scales
// its loss by 1 / (samples in the global step): exact even when ranks hold different numbers of
// samples, where dividing by the world size would not be.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/nn/param_layout.h"

namespace gradsync::ddp {

struct ReducerOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_mb = 1.0;
  comm::WireType wire = comm::WireType::kFloat32;
  // Empty: every bucket is all-reduced, each rank ending with the whole sum. Otherwise the
  // world size + 1 bounds of the ranks' shards of the gradient buffer (ddp.sharding
  // "gradients"): each bucket is reduce-scattered, a rank keeping the sum of its shard's part of
  // it, bitwise what the all-reduce gives there; the wire is fp32.
  std::vector<int64_t> shard_bounds;
  // With shard_bounds: called with the element ranges of each reduce-scattered bucket outside
  // this rank's shard once the collective is done (normally nn::Model::DiscardGrads), so a rank
  // holds whole gradients only for the buckets not yet reduced. Checked as backward reports
  // parameters final and at FinishStep. Empty: the buffer is kept whole.
  std::function<void(int64_t begin, int64_t end)> discard_unowned;
  // Exact parameter names, or prefixes ending in "." (e.g. "layers.0."), left out of buckets.
  std::vector<std::string> ignore_params;
  absl::Duration timeout = absl::Minutes(5);
};

struct Bucket {
  int index = 0;
  // Parameters [first_param, last_param) in layout order.
  int first_param = 0;
  int last_param = 0;
  // Elements [offset, offset + numel) of the gradient buffer.
  int64_t offset = 0;
  int64_t numel = 0;
};

// What one optimizer step's communication did. Times are seconds since BeginStep.
struct StepTimeline {
  struct BucketTimes {
    int64_t bytes = 0;
    double ready = 0;    // last parameter marked final
    double started = 0;  // the communication thread began the all-reduce
    double done = 0;
  };
  // Logical order of what happened, for checks that must not depend on timing.
  enum class EventKind { kBucketLaunched, kBackwardEnded, kAllDone };
  struct Event {
    EventKind kind;
    int bucket = -1;
  };

  std::vector<BucketTimes> buckets;
  std::vector<Event> events;
  double backward_end = 0;           // FinishStep was called
  double compute_seconds = 0;        // BeginStep to FinishStep
  double communication_seconds = 0;  // sum over buckets of done - started
  double exposed_seconds = 0;        // how long FinishStep waited
  bool communicated = false;         // false for accumulation-only micro-steps
};

class Reducer {
 public:
  // `grads` is the model's gradient buffer laid out by `layout`; both must outlive the reducer.
  // INVALID_ARGUMENT if the sizes disagree or an ignore pattern matches nothing.
  static absl::StatusOr<std::unique_ptr<Reducer>> Create(const nn::ParamLayout& layout, std::span<float> grads,
                                                         comm::Communicator* comm, ReducerOptions options);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  bool ignored(int param) const { return bucket_of_[param] < 0; }

  // One line per parameter (name, shape, bucket): equal on every rank of a healthy job.
  std::string LayoutDescription() const;

  // Starts a micro-step. With sync false (gradient accumulation) nothing is communicated and
  // MarkReady is a no-op, like DDP's no_sync().
  void BeginStep(bool sync);

  // Parameters [first, last) have final gradients. Called from the thread running backward.
  void MarkReady(int first, int last);

  // After backward: waits for every bucket. FAILED_PRECONDITION naming a parameter that was never
  // marked ready (or marked twice); the collective's error if one failed; DEADLINE_EXCEEDED after
  // the timeout.
  absl::Status FinishStep();

  const StepTimeline& timeline() const { return timeline_; }

 private:
  Reducer(const nn::ParamLayout& layout, std::span<float> grads, comm::Communicator* comm, ReducerOptions options);
  void Launch(int bucket);
  // Hands discard_unowned the parts outside this rank's shard of the buckets reduced so far
  // (all launched ones when `wait`, after FinishStep waited).
  void DiscardReduced(bool all);
  double Since() const;

  const nn::ParamLayout& layout_;
  std::span<float> grads_;
  comm::Communicator* comm_;
  ReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;  // per parameter; -1 when ignored
  // With shard_bounds, per bucket: each rank's part of it, relative to the bucket.
  std::vector<std::vector<int64_t>> bucket_bounds_;

  // Per step.
  bool sync_ = true;
  absl::Time step_start_;
  std::vector<int> pending_;          // per bucket: parameters not yet final
  std::vector<uint8_t> param_ready_;  // per parameter
  std::vector<std::shared_ptr<comm::Work>> work_;
  int next_launch_ = 0;
  int next_discard_ = 0;  // buckets before it have had their unowned parts discarded
  std::string error_;
  StepTimeline timeline_;
};

}  // namespace gradsync::ddp
