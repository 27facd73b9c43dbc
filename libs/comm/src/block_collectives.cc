// The block collectives' bounds, and their portable forms: a backend without its own runs
// ReduceScatterBlocks as an all-reduce and AllGatherBlocks as one broadcast per block.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/comm/communicator.h"

namespace gradsync::comm {
namespace {

// Done when every one of its collectives is; their first failure is its status.
class AllOf final : public Work {
 public:
  explicit AllOf(std::vector<std::shared_ptr<Work>> works) : works_(std::move(works)) {}

  Timing timing() const override {
    if (works_.empty()) return {};
    return {works_.front()->timing().started, works_.back()->timing().finished};
  }
  absl::Status Wait(absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    absl::Status first;
    for (const auto& w : works_) {
      absl::Status s = w->Wait(std::max(absl::ZeroDuration(), deadline - absl::Now()));
      if (absl::IsDeadlineExceeded(s)) return s;
      if (first.ok()) first = s;
    }
    return first;
  }
  bool Done() const override {
    return std::all_of(works_.begin(), works_.end(), [](const auto& w) { return w->Done(); });
  }

 private:
  std::vector<std::shared_ptr<Work>> works_;
};

}  // namespace

std::vector<int64_t> EvenBounds(int64_t count, int ranks) {
  std::vector<int64_t> bounds(static_cast<size_t>(ranks) + 1, 0);
  for (int r = 0; r < ranks; ++r) bounds[r + 1] = BlockRange(count, ranks, r).second;
  return bounds;
}

absl::Status CheckBounds(std::span<const int64_t> bounds, int64_t count, int ranks, const char* what) {
  if (bounds.size() != static_cast<size_t>(ranks) + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", bounds.size(), " block bounds for ", ranks, " ranks (needs ", ranks + 1, ")"));
  }
  if (bounds.front() != 0 || bounds.back() != count || !std::is_sorted(bounds.begin(), bounds.end())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": block bounds must rise from 0 to the buffer's ", count, " elements"));
  }
  return absl::OkStatus();
}

std::shared_ptr<Work> Communicator::ReduceScatterBlocks(std::span<float> data, std::span<const int64_t> bounds) {
  if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size(), "reducescatter"); !s.ok()) {
    return CompletedWork(s);
  }
  return AllReduce(data, ReduceOp::kSum);
}

std::shared_ptr<Work> Communicator::AllGatherBlocks(std::span<float> data, std::span<const int64_t> bounds) {
  if (absl::Status s = CheckBounds(bounds, static_cast<int64_t>(data.size()), size(), "allgather"); !s.ok()) {
    return CompletedWork(s);
  }
  std::vector<std::shared_ptr<Work>> works;
  for (int r = 0; r < size(); ++r) {
    works.push_back(Broadcast(data.subspan(bounds[r], bounds[r + 1] - bounds[r]), r));
  }
  return std::make_shared<AllOf>(std::move(works));
}

}  // namespace gradsync::comm
