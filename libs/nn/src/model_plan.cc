#include "gradsync/nn/model_plan.h"

#include <numeric>

#include "gradsync/nn/presets.h"

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

const char* ModelPlan::SizeField() const { return transformer() != nullptr ? "model.transformer" : "model.mlp.hiddenDims"; }

}  // namespace gradsync::nn
