#include "gradsync/train/train_init.h"

#include "absl/strings/str_cat.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/core/log.h"
#include "gradsync/spec/job_paths.h"

namespace gradsync::train {
namespace {

absl::Status Named(const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("model.initFrom: ", s.message()));
}

}  // namespace

absl::Status InitFromWeights(const TrainConfig& config, Replica& replica) {
  const v1::ModelSpec& model = config.model_spec;
  if (!config.init_roots.empty()) {
    absl::StatusOr<spec::ConfinedRoots> roots = spec::ConfinedRoots::Open(config.init_roots, "data or artifact root");
    if (!roots.ok()) return roots.status();
    if (absl::Status s = spec::CheckInitFrom(model, *roots); !s.ok()) return s;
  }
  const nn::ParamLayout& layout = replica.model().layout();
  absl::StatusOr<ckpt::ImportedWeights> imported = ckpt::ImportWeights(model.init_from(), model, layout);
  if (!imported.ok()) return Named(imported.status());
  GS_LOG(INFO) << "model.initFrom: loaded " << model.init_from() << " (" << imported->kind << ", " << layout.size()
               << " tensors, " << layout.total_numel() << " parameters"
               << (model.init_optimizer() ? ", with its optimizer state" : ", a fresh optimizer") << ")";
  ckpt::RankState state;
  if (model.init_optimizer()) {
    if (!imported->checkpoint.has_value() || imported->checkpoint->adam_m.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.initOptimizer: ", model.init_from(), " (", imported->kind, ") holds no optimizer state"));
    }
    state = *std::move(imported->checkpoint);
  } else {
    // A fresh optimizer: zero moments and step, as AdamW starts.
    state.params = std::move(imported->params);
    state.adam_m.assign(layout.total_numel(), 0.0f);
    state.adam_v.assign(layout.total_numel(), 0.0f);
  }
  return replica.LoadState(state);
}

}  // namespace gradsync::train
