// ReadCheckpointState and ReadCheckpointRange: a committed checkpoint's parts laid into one state,
// whole or a range of it, reading one part at a time.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/ckpt/checkpoint.h"

namespace gradsync::ckpt {
namespace {

// The part whose run fields the state takes, and whose values win where parts overlap.
int PreferredIndex(const v1::CheckpointManifest& m, int prefer_rank) {
  int fallback = 0;
  for (int i = 0; i < m.parts_size(); ++i) {
    if (m.parts(i).rank() == prefer_rank) return i;
    if (m.parts(i).rank() == 0) fallback = i;
  }
  return fallback;
}

// Lays the parts, one at a time, into elements [begin, end) of the flat buffers (end unset: to
// the last element), checking that they agree with one another and cover the range.
class RangeAssembler {
 public:
  RangeAssembler(const v1::CheckpointManifest& m, int64_t begin, std::optional<int64_t> end)
      : m_(m), begin_(begin), end_(end) {}

  // Takes the next part, in the manifest's order; the preferred part's values and run fields win.
  absl::Status Add(const RankState& part, bool preferred) {
    if (absl::Status s = First(part); !s.ok()) return s;
    if (absl::Status s = Agrees(part); !s.ok()) return s;
    if (preferred) TakeRunFields(part);
    LayIn(part, preferred);
    return absl::OkStatus();
  }

  absl::StatusOr<RankState> Finish() {
    if (const auto gap = std::find(covered_.begin(), covered_.end(), kUncovered); gap != covered_.end()) {
      return absl::DataLossError(absl::StrCat(m_.dir(), ": element ", begin_ + (gap - covered_.begin()), " of ",
                                              state_.layout.total_numel(),
                                              " is in no part (the parts do not cover the parameters)"));
    }
    return std::move(state_);
  }

 private:
  // The first part sets the model and the range's buffers.
  absl::Status First(const RankState& part) {
    if (first_rank_.has_value()) return absl::OkStatus();
    first_rank_ = part.rank;
    const int64_t total = part.layout.total_numel();
    const int64_t end = end_.value_or(total);
    if (begin_ < 0 || begin_ > end) {
      return absl::InvalidArgumentError(absl::StrCat("elements [", begin_, ", ", end, ") are no range"));
    }
    if (end > total) {
      return absl::FailedPreconditionError(
          absl::StrCat(m_.dir(), ": elements [", begin_, ", ", end, ") are beyond the checkpoint's model of ", total));
    }
    end_ = end;
    state_.model = part.model;
    state_.layout = part.layout;
    state_.shard_begin = begin_;
    state_.params.assign(static_cast<size_t>(end - begin_), 0.0f);
    covered_.assign(state_.params.size(), kUncovered);
    return absl::OkStatus();
  }

  // DATA_LOSS naming the checkpoint unless the part holds the first part's model, and carries
  // optimizer state exactly when the other parts with values do.
  absl::Status Agrees(const RankState& part) {
    if (part.layout.Hash() != state_.layout.Hash() || part.layout.total_numel() != state_.layout.total_numel()) {
      return absl::DataLossError(
          absl::StrCat(m_.dir(), ": rank ", part.rank, "'s part holds another model than rank ", *first_rank_, "'s"));
    }
    if (part.params.empty()) return absl::OkStatus();
    const bool moments = !part.adam_m.empty();
    if (moments_.has_value() && moments != moments_->second) {
      return absl::DataLossError(absl::StrCat(m_.dir(), ": rank ", part.rank, "'s part ", moments ? "carries" : "lacks",
                                              " optimizer state where rank ", moments_->first, "'s does not"));
    }
    if (!moments_.has_value()) {
      moments_.emplace(part.rank, moments);
      state_.adam_m.assign(moments ? state_.params.size() : 0, 0.0f);
      state_.adam_v.assign(moments ? state_.params.size() : 0, 0.0f);
    }
    return absl::OkStatus();
  }

  void TakeRunFields(const RankState& part) {
    state_.adam_step = part.adam_step;
    state_.step = part.step;
    state_.epoch = part.epoch;
    state_.cursor = part.cursor;
    state_.rank = part.rank;
    state_.world_size = part.world_size;
    state_.seed = part.seed;
    state_.job_id = part.job_id;
    state_.generation = part.generation;
  }

  // Copies the part's elements within the range, but for those the preferred part gave.
  void LayIn(const RankState& part, bool preferred) {
    const int64_t from = std::max(begin_, part.shard_begin);
    const int64_t to = std::min(*end_, part.shard_begin + static_cast<int64_t>(part.params.size()));
    const bool moments = !state_.adam_m.empty();
    for (int64_t e = from; e < to; ++e) {
      const auto src = static_cast<size_t>(e - part.shard_begin), dst = static_cast<size_t>(e - begin_);
      if (covered_[dst] == kByPreferred) continue;
      state_.params[dst] = part.params[src];
      if (moments) {
        state_.adam_m[dst] = part.adam_m[src];
        state_.adam_v[dst] = part.adam_v[src];
      }
      covered_[dst] = preferred ? kByPreferred : kCovered;
    }
  }

  enum Coverage : uint8_t { kUncovered, kCovered, kByPreferred };

  const v1::CheckpointManifest& m_;
  const int64_t begin_;
  std::optional<int64_t> end_;
  std::optional<int32_t> first_rank_;
  std::optional<std::pair<int32_t, bool>> moments_;  // the first part with values: rank, has moments
  RankState state_;
  std::vector<Coverage> covered_;
};

absl::StatusOr<RankState> Assemble(const v1::CheckpointManifest& m, int prefer_rank, int64_t begin,
                                   std::optional<int64_t> end) {
  if (m.parts().empty()) return absl::DataLossError(absl::StrCat(m.dir(), ": the manifest lists no parts"));
  const int preferred = PreferredIndex(m, prefer_rank);
  RangeAssembler range(m, begin, end);
  for (int i = 0; i < m.parts_size(); ++i) {
    absl::StatusOr<RankState> part = ReadRankPart(m.dir(), m.parts(i));
    if (!part.ok()) return part.status();
    if (absl::Status s = range.Add(*part, i == preferred); !s.ok()) return s;
  }
  return range.Finish();
}

}  // namespace

absl::StatusOr<RankState> ReadCheckpointState(const v1::CheckpointManifest& m, int prefer_rank) {
  return Assemble(m, prefer_rank, 0, std::nullopt);
}

absl::StatusOr<RankState> ReadCheckpointRange(const v1::CheckpointManifest& m, int prefer_rank, int64_t begin,
                                              int64_t end) {
  return Assemble(m, prefer_rank, begin, end);
}

}  // namespace gradsync::ckpt
