#include "gradsync/nn/model.h"

#include <algorithm>

#include "gradsync/nn/transformer_params.h"
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

std::unique_ptr<Model> CreateModel(const ModelPlan& plan, ModelInit init) {
  std::unique_ptr<Model> model;
  if (const TransformerPlan* t = plan.transformer()) {
    model = std::make_unique<Transformer>(t->dims);
  } else {
    model = std::make_unique<Mlp>(*plan.mlp());
  }
  if (init == ModelInit::kFromSeed) model->InitParams(plan.seed);
  return model;
}

int64_t LargestUnitNumel(const ModelPlan& plan) {
  if (plan.mlp() != nullptr) {
    const std::vector<int64_t> layers = plan.mlp()->LayerNumels();
    return *std::max_element(layers.begin(), layers.end());
  }
  ParamLayout layout;
  const TransformerParams index = AddTransformerParams(plan.transformer()->dims, &layout);
  int64_t largest = 0;
  for (const ParamUnit& unit : index.Units(layout.size())) {
    int64_t numel = 0;
    for (const ParamRange& r : unit) {
      const auto [begin, end] = layout.Elements(r.first, r.last);
      numel += end - begin;
    }
    largest = std::max(largest, numel);
  }
  return largest;
}

}  // namespace gradsync::nn
