// The model presets and the transformer configuration they resolve to: which values a preset
// gives, how fields set in a job spec override them, the rules a configuration must satisfy,
// and its size (parameters, FLOPs per token). Pure functions of protos; no tensors.
//
// Transformer presets (every value can be overridden in model.transformer):
//
//   preset        flavour layers heads kvHeads width mlpWidth seqLen vocabSize ropeTheta normEps
//   gpt-tiny      gpt2    4      4     4       128   512      128    256       -         1e-5
//   gpt2-124m     gpt2    12     12    12      768   3072     1024   50257     -         1e-5
//   minimind-26m  llama   8      8     2       512   1408     512    256       1e6       1e-5
//
// gpt2-124m keeps GPT-2's vocabulary of 50257 unpadded (llm.c pads it to 50304 for GPU speed):
// 124,439,808 parameters with tied embeddings. minimind-26m is MiniMind's architecture with
// our byte vocabulary (256, not MiniMind's 6400), so it has 22.7M parameters instead of 25.8M.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::nn {

// Every value model.preset accepts: "mlp", then the transformer presets.
const std::vector<std::string>& ModelPresetNames();

bool IsTransformerPreset(const std::string& preset);

// The preset's configuration with every field set (nonzero or nonempty) in model.transformer
// laid over it. Then kvHeads 0 means `heads`; ropeTheta is 0 (unused) for the gpt2 flavour
// unless set, and the preset's value or 10000 for llama. Every field of the result is set.
// INVALID_ARGUMENT "model.preset: ..." if model.preset is not a transformer preset. Does not
// validate: see ValidateTransformerConfig.
absl::StatusOr<gradsync::v1::TransformerConfig> ResolveTransformerConfig(const gradsync::v1::ModelSpec& model);

// Checks a resolved configuration. INVALID_ARGUMENT for the first bad field, named by its JSON
// path, e.g. "model.transformer.kvHeads: must divide heads (8), got 3". TransformerDims::FromConfig
// (model_config.h) checks with it and then derives the dimensions.
absl::Status ValidateTransformerConfig(const gradsync::v1::TransformerConfig& config);

// Number of parameters of a valid configuration (embeddings tied: counted once).
int64_t NumParams(const TransformerDims& dims);
int64_t NumParams(const gradsync::v1::TransformerConfig& config);

// Training FLOPs (forward + backward) per token, nanoGPT's and PaLM's estimate:
//   6 N + 12 L C T
// where N is NumParams minus the position table (a lookup, not a product; the tied token
// embedding stays in N because it is the output projection), L layers, C width (= heads x head
// dim), T seqLen. 6 N counts a multiply-add of every weight per token, forward (2) and backward
// (4); 12 L C T the attention scores and weighted values over full, unmasked T x T matrices.
double FlopsPerToken(const gradsync::v1::TransformerConfig& config);

// One line, e.g. "gpt2 L4 H4 C128 M512 T128 V256, 0.84M params"; kvHeads appear as KV2 when
// they differ from heads. For a valid configuration.
std::string DescribeTransformer(const TransformerDims& dims);
std::string DescribeTransformer(const gradsync::v1::TransformerConfig& config);

}  // namespace gradsync::nn
