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
  params_ = PageBuffer(layout_.total_numel());
  grads_ = PageBuffer(layout_.total_numel());
  params_view_ = params_.span();
  grads_view_ = grads_.span();
}

void Model::UseExternalBuffers(std::span<float> params, std::span<float> grads) {
  params_ = PageBuffer();
  grads_ = PageBuffer();
  params_view_ = params;
  grads_view_ = grads;
}

void Model::DiscardParams(int64_t begin, int64_t end) { params_.Release(begin, end); }

void Model::DiscardGrads(int64_t begin, int64_t end) { grads_.Release(begin, end); }

int64_t Model::ResidentParamBytes() const {
  return params_.size() == params_view_.size() ? params_.ResidentBytes(0, params_.size()) : -1;
}

int64_t Model::ResidentGradBytes() const {
  return grads_.size() == grads_view_.size() ? grads_.ResidentBytes(0, grads_.size()) : -1;
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const gradsync::v1::JobSpec& spec, ModelInit init) {
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
  if (init == ModelInit::kFromSeed) model->InitParams(spec.training().seed());
  return model;
}

}  // namespace gradsync::nn
