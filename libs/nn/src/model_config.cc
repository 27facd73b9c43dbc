#include "gradsync/nn/model_config.h"

#include "absl/strings/str_cat.h"
#include "gradsync/nn/presets.h"

namespace gradsync::nn {
namespace {

constexpr Flavour kFlavours[] = {Flavour::kGpt2, Flavour::kLlama};
constexpr Activation kActivations[] = {Activation::kGelu, Activation::kRelu};

}  // namespace

const char* FlavourName(Flavour flavour) {
  switch (flavour) {
    case Flavour::kGpt2: return "gpt2";
    case Flavour::kLlama: return "llama";
  }
  return "?";
}

const char* ActivationName(Activation activation) {
  switch (activation) {
    case Activation::kGelu: return "gelu";
    case Activation::kRelu: return "relu";
  }
  return "?";
}

absl::StatusOr<Flavour> ParseFlavour(absl::string_view name) {
  for (Flavour f : kFlavours) {
    if (name == FlavourName(f)) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("model.transformer.flavour: must be one of gpt2, llama, got \"", name, "\""));
}

absl::StatusOr<Activation> ParseActivation(absl::string_view name) {
  for (Activation a : kActivations) {
    if (name == ActivationName(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("model.mlp.activation: unknown activation \"", name, "\"; known: gelu, relu"));
}

absl::StatusOr<TransformerDims> TransformerDims::FromConfig(const gradsync::v1::TransformerConfig& config) {
  if (absl::Status s = ValidateTransformerConfig(config); !s.ok()) return s;
  return FromValidConfig(config);
}

TransformerDims TransformerDims::FromValidConfig(const gradsync::v1::TransformerConfig& config) {
  TransformerDims d;
  d.flavour = ParseFlavour(config.flavour()).value_or(Flavour::kLlama);
  d.layers = config.layers();
  d.heads = config.heads();
  d.kv_heads = config.kv_heads();
  d.width = config.width();
  d.head_dim = d.width / d.heads;
  d.mlp_width = config.mlp_width();
  d.seq_len = config.seq_len();
  d.vocab = config.vocab_size();
  d.qkv_width = (d.heads + 2 * d.kv_heads) * d.head_dim;
  d.fc_width = d.gpt2() ? d.mlp_width : 2 * d.mlp_width;
  d.rope_theta = config.rope_theta();
  d.norm_eps = config.norm_eps();
  return d;
}

}  // namespace gradsync::nn
