#include "gradsync/nn/model.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gradsync/nn/presets.h"
#include "mlp.h"
#include "transformer.h"

namespace gradsync::nn {

void Model::ZeroGrads() { std::fill(grads_view_.begin(), grads_view_.end(), 0.0f); }

void Model::AllocateBuffers() {
  params_.assign(layout_.total_numel(), 0.0f);
  grads_.assign(layout_.total_numel(), 0.0f);
  params_view_ = params_;
  grads_view_ = grads_;
}

void Model::UseExternalBuffers(std::span<float> params, std::span<float> grads) {
  params_.clear();
  grads_.clear();
  params_view_ = params;
  grads_view_ = grads;
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const gradsync::v1::JobSpec& spec) {
  const std::string& preset = spec.model().preset();
  std::unique_ptr<Model> model;
  if (preset == "mlp") {
    absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(spec);
    if (!mlp.ok()) return mlp.status();
    model = *std::move(mlp);
  } else if (IsTransformerPreset(preset)) {
    absl::StatusOr<std::unique_ptr<Transformer>> transformer = Transformer::Create(spec.model());
    if (!transformer.ok()) return transformer.status();
    model = *std::move(transformer);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("model.preset: unknown preset \"", preset,
                                                   "\"; known: ", absl::StrJoin(ModelPresetNames(), ", ")));
  }
  model->InitParams(spec.training().seed());
  return model;
}

}  // namespace gradsync::nn
