#include "gradsync/ddp/reducer.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace gradsync::ddp {
namespace {

bool Matches(const std::string& name, const std::string& pattern) {
  return absl::EndsWith(pattern, ".") ? absl::StartsWith(name, pattern) : name == pattern;
}

int64_t MbToElements(double mb) { return std::max<int64_t>(1, static_cast<int64_t>(mb * 1024 * 1024 / sizeof(float))); }

}  // namespace

Reducer::Reducer(const nn::ParamLayout& layout, std::span<float> grads, comm::Communicator* comm,
                 ReducerOptions options)
    : layout_(layout), grads_(grads), comm_(comm), options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Reducer>> Reducer::Create(const nn::ParamLayout& layout, std::span<float> grads,
                                                         comm::Communicator* comm, ReducerOptions options) {
  if (static_cast<int64_t>(grads.size()) != layout.total_numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient buffer has ", grads.size(), " elements, layout ", layout.total_numel()));
  }
  for (const std::string& pattern : options.ignore_params) {
    bool any = false;
    for (const auto& p : layout.params()) any = any || Matches(p.name, pattern);
    if (!any) {
      return absl::InvalidArgumentError(absl::StrCat("ddp.ignoreParams: \"", pattern, "\" matches no parameter"));
    }
  }
  std::unique_ptr<Reducer> r(new Reducer(layout, grads, comm, std::move(options)));
  r->bucket_of_.assign(layout.size(), -1);

  // Walk parameters last to first; a bucket closes when full or when an ignored parameter would
  // break its contiguity.
  const int64_t first_cap = MbToElements(r->options_.first_bucket_mb);
  const int64_t cap = MbToElements(r->options_.bucket_cap_mb);
  Bucket open;
  bool has_open = false;
  auto close = [&] {
    if (!has_open) return;
    open.index = static_cast<int>(r->buckets_.size());
    for (int p = open.first_param; p < open.last_param; ++p) r->bucket_of_[p] = open.index;
    r->buckets_.push_back(open);
    has_open = false;
  };
  for (int p = layout.size() - 1; p >= 0; --p) {
    const nn::ParamInfo& info = layout.param(p);
    bool skip = false;
    for (const std::string& pattern : r->options_.ignore_params) skip = skip || Matches(info.name, pattern);
    if (skip) {
      close();
      continue;
    }
    const int64_t limit = r->buckets_.empty() ? first_cap : cap;
    if (has_open && open.numel + info.numel > limit) close();
    if (!has_open) {
      open = Bucket{0, p, p + 1, info.offset, info.numel};
      has_open = true;
    } else {
      open.first_param = p;
      open.offset = info.offset;
      open.numel += info.numel;
    }
  }
  close();
  for (const Bucket& b : r->buckets_) {
    if (r->options_.shard_bounds.empty()) break;
    std::vector<int64_t>& bounds = r->bucket_bounds_.emplace_back(r->options_.shard_bounds.size());
    for (size_t k = 0; k < bounds.size(); ++k) {
      bounds[k] = std::clamp(r->options_.shard_bounds[k], b.offset, b.offset + b.numel) - b.offset;
    }
  }
  return r;
}

std::string Reducer::LayoutDescription() const {
  std::vector<std::string> lines;
  for (int p = 0; p < layout_.size(); ++p) {
    const nn::ParamInfo& info = layout_.param(p);
    lines.push_back(absl::StrCat(info.name, " [", absl::StrJoin(info.shape, ","), "] bucket ",
                                 bucket_of_[p] < 0 ? std::string("ignored") : absl::StrCat(bucket_of_[p])));
  }
  return absl::StrJoin(lines, "\n");
}

double Reducer::Since() const { return absl::ToDoubleSeconds(absl::Now() - step_start_); }

void Reducer::BeginStep(bool sync) {
  sync_ = sync;
  step_start_ = absl::Now();
  pending_.assign(buckets_.size(), 0);
  for (const Bucket& b : buckets_) pending_[b.index] = b.last_param - b.first_param;
  param_ready_.assign(layout_.size(), 0);
  work_.assign(buckets_.size(), nullptr);
  next_launch_ = 0;
  next_discard_ = 0;
  error_.clear();
  timeline_ = StepTimeline();
  timeline_.communicated = sync;
  timeline_.buckets.resize(buckets_.size());
  for (const Bucket& b : buckets_) timeline_.buckets[b.index].bytes = b.numel * static_cast<int64_t>(sizeof(float));
}

void Reducer::MarkReady(int first, int last) {
  if (!sync_) return;
  for (int p = first; p < last; ++p) {
    if (param_ready_[p]++ > 0) {
      if (error_.empty())
        error_ = absl::StrCat("parameter ", layout_.param(p).name, " was marked ready twice in one step");
      continue;
    }
    const int b = bucket_of_[p];
    if (b >= 0 && --pending_[b] == 0) timeline_.buckets[b].ready = Since();
  }
  // Launch in index order: every rank then issues the same collectives in the same order.
  while (next_launch_ < static_cast<int>(buckets_.size()) && pending_[next_launch_] == 0) {
    Launch(next_launch_++);
  }
  DiscardReduced(/*all=*/false);
}

void Reducer::Launch(int b) {
  const Bucket& bucket = buckets_[b];
  const std::span<float> data = grads_.subspan(bucket.offset, bucket.numel);
  if (options_.shard_bounds.empty()) {
    work_[b] = comm_->AllReduce(data, comm::ReduceOp::kSum, options_.wire);
  } else {
    work_[b] = comm_->ReduceScatterBlocks(data, bucket_bounds_[b]);
  }
  timeline_.events.push_back({StepTimeline::EventKind::kBucketLaunched, b});
}

void Reducer::DiscardReduced(bool all) {
  if (!options_.discard_unowned || options_.shard_bounds.empty()) return;
  const int rank = comm_->rank();
  while (next_discard_ < next_launch_ && (all || work_[next_discard_]->Done())) {
    const Bucket& bucket = buckets_[next_discard_];
    const std::vector<int64_t>& bounds = bucket_bounds_[next_discard_++];
    const int64_t begin = bucket.offset + bounds[rank], end = bucket.offset + bounds[rank + 1];
    if (begin > bucket.offset) options_.discard_unowned(bucket.offset, begin);
    if (end < bucket.offset + bucket.numel) options_.discard_unowned(end, bucket.offset + bucket.numel);
  }
}

absl::Status Reducer::FinishStep() {
  timeline_.backward_end = Since();
  timeline_.compute_seconds = timeline_.backward_end;
  timeline_.events.push_back({StepTimeline::EventKind::kBackwardEnded, -1});
  if (!sync_) return absl::OkStatus();
  absl::Status status;
  if (!error_.empty()) status = absl::FailedPreconditionError(error_);
  if (status.ok() && next_launch_ < static_cast<int>(buckets_.size())) {
    const Bucket& b = buckets_[next_launch_];
    for (int p = b.first_param; p < b.last_param; ++p) {
      if (!param_ready_[p]) {
        status = absl::FailedPreconditionError(
            absl::StrCat("parameter ", layout_.param(p).name, " was never marked ready during backward; ",
                         "every parameter must receive a gradient each step (or be listed in ddp.ignoreParams)"));
        break;
      }
    }
  }
  // Even on error, wait for what was launched: its buffers must not be touched meanwhile.
  const absl::Time deadline = absl::Now() + options_.timeout;
  for (size_t b = 0; b < work_.size(); ++b) {
    if (work_[b] == nullptr) continue;
    absl::Status s = work_[b]->Wait(std::max(absl::ZeroDuration(), deadline - absl::Now()));
    if (status.ok() && !s.ok()) status = s;
    const comm::Work::Timing t = work_[b]->timing();
    StepTimeline::BucketTimes& bt = timeline_.buckets[b];
    if (t.finished != absl::Time()) {
      bt.started = absl::ToDoubleSeconds(t.started - step_start_);
      bt.done = absl::ToDoubleSeconds(t.finished - step_start_);
      timeline_.communication_seconds += bt.done - bt.started;
    }
  }
  if (status.ok()) DiscardReduced(/*all=*/true);
  timeline_.exposed_seconds = Since() - timeline_.backward_end;
  timeline_.events.push_back({StepTimeline::EventKind::kAllDone, -1});
  return status;
}

}  // namespace gradsync::ddp
