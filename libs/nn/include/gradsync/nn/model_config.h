// The model's spec choices as types, parsed once where a configuration enters nn: the transformer
// flavour and the MLP activation as enums, and a transformer's dimensions derived once from its
// resolved configuration (presets.h). Past this boundary nn compares enums, never spec strings,
// and derives no dimension again: the CPU Transformer, the GPU model and the parameter layout
// (transformer_params.h) all read one TransformerDims.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gradsync/kernels/attention_shape.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::nn {

// model.transformer.flavour: "gpt2" (LayerNorm, biases, GELU MLP, learned positions) or "llama"
// (RMSNorm, no biases, SwiGLU MLP, rotary positions); see src/transformer.h.
enum class Flavour { kGpt2, kLlama };

// model.mlp.activation: "gelu" or "relu".
enum class Activation { kGelu, kRelu };

// The spec's spelling of each value.
const char* FlavourName(Flavour flavour);
const char* ActivationName(Activation activation);

// The value a spec string names. INVALID_ARGUMENT naming the field and the choices otherwise:
// "model.transformer.flavour: must be one of gpt2, llama, got \"bert\"" (the message
// ValidateTransformerConfig gives) and "model.mlp.activation: unknown activation \"tanh\";
// known: gelu, relu" (the message CreateModel gives).
absl::StatusOr<Flavour> ParseFlavour(absl::string_view name);
absl::StatusOr<Activation> ParseActivation(absl::string_view name);

// A transformer's dimensions, with every derived size computed once.
struct TransformerDims {
  Flavour flavour = Flavour::kGpt2;
  int64_t layers = 0;       // L
  int64_t heads = 0;        // H
  int64_t kv_heads = 0;     // KVH (divides H)
  int64_t width = 0;        // C
  int64_t head_dim = 0;     // D = C / H
  int64_t mlp_width = 0;    // M
  int64_t seq_len = 0;      // the context length (seqLen): the longest sequence a batch may hold
  int64_t vocab = 0;        // V
  int64_t qkv_width = 0;    // Q = (H + 2 KVH) D, the fused qkv projection's rows
  int64_t fc_width = 0;     // F: M for gpt2, 2M for llama's fused gate/up projection
  double rope_theta = 0.0;  // llama's rotary base; 0 for gpt2
  double norm_eps = 0.0;

  bool gpt2() const { return flavour == Flavour::kGpt2; }

  // The attention kernels' shape for `batch` sequences of `seq_len` tokens.
  kernels::AttentionShape Attention(int64_t batch, int64_t seq_len) const {
    return {batch, seq_len, heads, kv_heads, head_dim};
  }

  // The dimensions of a resolved configuration (ResolveTransformerConfig). INVALID_ARGUMENT,
  // naming the field as ValidateTransformerConfig does, when it is not valid.
  static absl::StatusOr<TransformerDims> FromConfig(const gradsync::v1::TransformerConfig& config);
  // The same without the checks, for a configuration already validated. A flavour other than
  // gpt2 counts as llama.
  static TransformerDims FromValidConfig(const gradsync::v1::TransformerConfig& config);
};

}  // namespace gradsync::nn
