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
  // so it adds nothing to the loss or the gradients. A dataset read from disk as it trains fails
  // here, naming the file (a token outside the vocabulary, a file cut while training).
  virtual absl::Status Fill(std::span<const int64_t> indices, nn::Batch* out) const = 0;
  // Whether Fill may leave targets of real samples out of the loss (loss masks: a chat's prompts),
  // so that only the filled batches tell how many targets a step counts. False: every target of
  // a real sample counts.
  virtual bool masked() const { return false; }
};

// The dataset of a plan: the synthetic task, or a TokenDataset of the plan's seqLen and vocabulary.
// Reads every token file now. INVALID_ARGUMENT naming the file (a missing one, a bad shard, one too
// short for a single window).
absl::StatusOr<std::unique_ptr<Dataset>> CreateDataset(const DataPlan& plan);

}  // namespace gradsync::data
