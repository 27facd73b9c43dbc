// ReadCheckpointState: a committed checkpoint's parts laid into one whole state.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/ckpt/checkpoint.h"

namespace gradsync::ckpt {
namespace {

// DATA_LOSS naming the checkpoint unless every part holds the same model, and every part with
// values carries optimizer state or none does.
absl::Status Consistent(const v1::CheckpointManifest& m, const std::vector<RankState>& parts) {
  const RankState* with_values = nullptr;
  for (const RankState& part : parts) {
    if (part.layout.Hash() != parts[0].layout.Hash() || part.layout.total_numel() != parts[0].layout.total_numel()) {
      return absl::DataLossError(
          absl::StrCat(m.dir(), ": rank ", part.rank, "'s part holds another model than rank ", parts[0].rank, "'s"));
    }
    if (part.params.empty()) continue;
    if (with_values != nullptr && part.adam_m.empty() != with_values->adam_m.empty()) {
      return absl::DataLossError(absl::StrCat(m.dir(), ": rank ", part.rank, "'s part ",
                                              part.adam_m.empty() ? "lacks" : "carries", " optimizer state where rank ",
                                              with_values->rank, "'s does not"));
    }
    with_values = &part;
  }
  return absl::OkStatus();
}

// Copies a part's shard into the whole state, marking what it covered.
void LayIn(const RankState& part, RankState* whole, std::vector<bool>* covered) {
  const auto at = static_cast<size_t>(part.shard_begin);
  std::copy(part.params.begin(), part.params.end(), whole->params.begin() + static_cast<std::ptrdiff_t>(at));
  if (!whole->adam_m.empty() && !part.adam_m.empty()) {
    std::copy(part.adam_m.begin(), part.adam_m.end(), whole->adam_m.begin() + static_cast<std::ptrdiff_t>(at));
    std::copy(part.adam_v.begin(), part.adam_v.end(), whole->adam_v.begin() + static_cast<std::ptrdiff_t>(at));
  }
  std::fill_n(covered->begin() + static_cast<std::ptrdiff_t>(at), part.params.size(), true);
}

// The part whose run fields the whole state takes, and whose values win where parts overlap.
int PreferredIndex(const v1::CheckpointManifest& m, int prefer_rank) {
  int fallback = 0;
  for (int i = 0; i < m.parts_size(); ++i) {
    if (m.parts(i).rank() == prefer_rank) return i;
    if (m.parts(i).rank() == 0) fallback = i;
  }
  return fallback;
}

}  // namespace

absl::StatusOr<RankState> ReadCheckpointState(const v1::CheckpointManifest& m, int prefer_rank) {
  if (m.parts().empty()) return absl::DataLossError(absl::StrCat(m.dir(), ": the manifest lists no parts"));
  std::vector<RankState> parts;
  for (const v1::CheckpointPart& p : m.parts()) {
    absl::StatusOr<RankState> part = ReadRankPart(m.dir(), p);
    if (!part.ok()) return part.status();
    parts.push_back(*std::move(part));
  }
  if (absl::Status s = Consistent(m, parts); !s.ok()) return s;
  const bool moments = std::any_of(parts.begin(), parts.end(), [](const RankState& p) { return !p.adam_m.empty(); });
  const int preferred = PreferredIndex(m, prefer_rank);
  const auto total = static_cast<size_t>(parts[0].layout.total_numel());
  RankState whole = parts[preferred];
  whole.shard_begin = 0;
  whole.params.assign(total, 0.0f);
  whole.adam_m.assign(moments ? total : 0, 0.0f);
  whole.adam_v.assign(moments ? total : 0, 0.0f);
  std::vector<bool> covered(total, false);
  for (int i = 0; i < static_cast<int>(parts.size()); ++i) {
    if (i != preferred) LayIn(parts[i], &whole, &covered);
  }
  LayIn(parts[preferred], &whole, &covered);  // last: its values win
  if (const auto gap = std::find(covered.begin(), covered.end(), false); gap != covered.end()) {
    return absl::DataLossError(absl::StrCat(m.dir(), ": element ", gap - covered.begin(), " of ", total,
                                            " is in no part (the parts do not cover the parameters)"));
  }
  return whole;
}

}  // namespace gradsync::ckpt
