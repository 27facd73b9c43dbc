#include "gradsync/data/dataset.h"

#include "gradsync/data/token_dataset.h"
#include "synthetic_teacher.h"

namespace gradsync::data {

absl::StatusOr<std::unique_ptr<Dataset>> CreateDataset(const DataPlan& plan) {
  if (const SyntheticPlan* s = std::get_if<SyntheticPlan>(&plan.source)) {
    return std::make_unique<SyntheticTeacherDataset>(
        SyntheticTeacherConfig{s->num_samples, s->input_dim, s->num_classes, s->teacher_hidden, s->seed});
  }
  const TokenPlan& t = std::get<TokenPlan>(plan.source);
  absl::StatusOr<std::unique_ptr<TokenDataset>> tokens =
      TokenDataset::Load(t.paths, t.shards, static_cast<int>(t.seq_len), static_cast<int>(t.vocab));
  if (!tokens.ok()) return tokens.status();
  return std::unique_ptr<Dataset>(*std::move(tokens));
}

}  // namespace gradsync::data
