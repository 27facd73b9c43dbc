// Datasets with random access by sample index: any rank can build any batch from indices alone,
// so data sharding keeps no per-rank state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "gradsync/data/data_plan.h"
#include "gradsync/nn/model.h"

namespace gradsync::data {

// The index that asks Dataset::Fill for a padding sample (the sampler's ddp::kPadSample).
inline constexpr int64_t kPadIndex = -1;

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Fills `out` with the samples at `indices`, in order. Indices must be < size(), or
  // kPadIndex for a padding sample: zero inputs whose targets are all the ignore index,
  // so it adds nothing to the loss or the gradients.
  virtual void Fill(std::span<const int64_t> indices, nn::Batch* out) const = 0;
};

// The dataset of a plan: the synthetic task, or a TokenDataset of the plan's seqLen and vocabulary.
// Reads every token file now. INVALID_ARGUMENT naming the file (a missing one, a bad shard, one too
// short for a single window).
absl::StatusOr<std::unique_ptr<Dataset>> CreateDataset(const DataPlan& plan);

}  // namespace gradsync::data
