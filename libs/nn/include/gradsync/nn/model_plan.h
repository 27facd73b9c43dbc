// A job's model as the libraries build it: the architecture resolved from the spec once (libs/spec's
// job_plan.h), with every dimension typed and checked. nn::CreateModel and the GPU model take this,
// never the spec; the coordinator's placement and budget read it too.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "gradsync/nn/model_config.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::nn {

// The mlp preset: input_dim -> hidden_dims... -> num_classes, each layer a [out, in] weight and an
// [out] bias. Every width is at least 1, num_classes at least 2.
struct MlpConfig {
  int64_t input_dim = 0;
  std::vector<int64_t> hidden_dims;
  int64_t num_classes = 0;
  Activation activation = Activation::kGelu;

  // Each layer's parameters (its weight and bias), input to output.
  std::vector<int64_t> LayerNumels() const;
};

// A transformer preset: its name, the configuration every field of which is set
// (ResolveTransformerConfig) and valid (ValidateTransformerConfig), and its dimensions.
struct TransformerPlan {
  std::string preset;
  gradsync::v1::TransformerConfig config;
  TransformerDims dims;
};

struct ModelPlan {
  std::variant<MlpConfig, TransformerPlan> arch;
  // training.seed: what InitParams draws from.
  uint64_t seed = 0;

  const MlpConfig* mlp() const { return std::get_if<MlpConfig>(&arch); }
  const TransformerPlan* transformer() const { return std::get_if<TransformerPlan>(&arch); }
  // Whether a GPU implementation exists: every transformer, no mlp.
  bool has_gpu_model() const { return transformer() != nullptr; }
  // The parameters (embeddings tied: counted once).
  int64_t NumParams() const;
  // The spec field that sizes the model: "model.transformer" or "model.mlp.hiddenDims".
  const char* SizeField() const;
  // The tensors the model keeps beside its parameters: computed alike on every rank from the
  // configuration, never trained and never synchronised (PyTorch's buffers). A llama's RoPE
  // tables, named as MiniMind and PyTorch scripts name them: "freqs_cos", "freqs_sin". None for
  // gpt2 (learned positions are parameters) or the mlp.
  std::vector<std::string> BufferNames() const;
  // The model's parameter layout (names, shapes, offsets), the very one CreateModel's model has,
  // without building the model.
  ParamLayout Layout() const;
  // Its parameters' names in layout order, as weights files, checkpoints and ddp.ignoreParams
  // name them ("blocks.0.attn.qkv.weight", "layers.0.bias").
  std::vector<std::string> ParamNames() const;
};

}  // namespace gradsync::nn
