// DiffParams: how far each parameter tensor moved between two rank states.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gradsync/ckpt/checkpoint.h"

namespace gradsync::ckpt {
namespace {

std::string Shape(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

bool BitwiseEqual(float a, float b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }

}  // namespace

absl::StatusOr<std::vector<TensorDiff>> DiffParams(const RankState& a, const RankState& b) {
  const auto& pa = a.layout.params();
  const auto& pb = b.layout.params();
  for (size_t i = 0; i < std::min(pa.size(), pb.size()); ++i) {
    if (pa[i].name != pb[i].name || pa[i].shape != pb[i].shape) {
      return absl::FailedPreconditionError(absl::StrCat("parameter ", i, " differs: ", pa[i].name, " ",
                                                        Shape(pa[i].shape), " vs ", pb[i].name, " ",
                                                        Shape(pb[i].shape)));
    }
  }
  if (pa.size() != pb.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the states have ", pa.size(), " and ", pb.size(), " parameters"));
  }
  if (!a.whole() || !b.whole()) {
    return absl::FailedPreconditionError(
        "a state holds one shard of the parameters (a part of a sharded checkpoint): compare checkpoint "
        "directories, whose parts are read together");
  }
  std::vector<TensorDiff> out;
  out.reserve(pa.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    TensorDiff d{pa[i].name, 0.0, 0.0, pa[i].numel};
    const float* x = a.params.data() + pa[i].offset;
    const float* y = b.params.data() + pb[i].offset;
    for (int64_t j = 0; j < pa[i].numel; ++j) {
      if (BitwiseEqual(x[j], y[j])) continue;
      double abs = std::fabs(static_cast<double>(x[j]) - static_cast<double>(y[j]));
      double rel =
          abs / std::max({std::fabs(static_cast<double>(x[j])), std::fabs(static_cast<double>(y[j])), kDiffTiny});
      if (std::isnan(abs)) abs = rel = std::numeric_limits<double>::infinity();
      d.max_abs = std::max(d.max_abs, abs);
      d.max_rel = std::max(d.max_rel, rel);
    }
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace gradsync::ckpt
