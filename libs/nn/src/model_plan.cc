#include "gradsync/nn/model_plan.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "gradsync/nn/presets.h"
#include "gradsync/nn/transformer_params.h"

namespace gradsync::nn {

std::vector<int64_t> MlpConfig::LayerNumels() const {
  std::vector<int64_t> dims = {input_dim};
  dims.insert(dims.end(), hidden_dims.begin(), hidden_dims.end());
  dims.push_back(num_classes);
  std::vector<int64_t> numels;
  for (size_t i = 0; i + 1 < dims.size(); ++i) numels.push_back(dims[i + 1] * dims[i] + dims[i + 1]);
  return numels;
}

int64_t ModelPlan::NumParams() const {
  if (const TransformerPlan* t = transformer()) return nn::NumParams(t->dims);
  const std::vector<int64_t> layers = mlp()->LayerNumels();
  return std::accumulate(layers.begin(), layers.end(), int64_t{0});
}

std::vector<std::string> ModelPlan::BufferNames() const {
  const TransformerPlan* t = transformer();
  if (t == nullptr || t->dims.gpt2()) return {};
  return {"freqs_cos", "freqs_sin"};
}

ParamLayout ModelPlan::Layout() const {
  ParamLayout layout;
  if (const TransformerPlan* t = transformer()) {
    AddTransformerParams(t->dims, &layout);
    return layout;
  }
  // As the mlp lays out its layers (mlp.cc): each a [out, in] weight, then its [out] bias.
  std::vector<int64_t> dims = {mlp()->input_dim};
  dims.insert(dims.end(), mlp()->hidden_dims.begin(), mlp()->hidden_dims.end());
  dims.push_back(mlp()->num_classes);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    layout.Add(absl::StrCat("layers.", i, ".weight"), {dims[i + 1], dims[i]}, /*weight_decay=*/true);
    layout.Add(absl::StrCat("layers.", i, ".bias"), {dims[i + 1]}, /*weight_decay=*/false);
  }
  return layout;
}

std::vector<std::string> ModelPlan::ParamNames() const {
  const ParamLayout layout = Layout();
  std::vector<std::string> names;
  for (const ParamInfo& p : layout.params()) names.push_back(p.name);
  return names;
}

const char* ModelPlan::SizeField() const { return transformer() != nullptr ? "model.transformer" : "model.mlp.hiddenDims"; }

}  // namespace gradsync::nn
