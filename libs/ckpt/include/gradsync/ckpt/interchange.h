// Weights in and out of gradsync: exports a model's weights in other layouts and imports them back.
//
//   format    what it writes                                    names and layouts
//   hf        OUT/model.safetensors + OUT/config.json           Hugging Face's GPT2LMHeadModel (gpt2
//                                                               flavour) or LlamaForCausalLM (llama)
//   gradsync  OUT/model.safetensors + OUT/config.json           gradsync's own parameter names
//   llmc      the file OUT                                      llm.c's GPT-2 checkpoint, version 3
//
// hf, gpt2 flavour: transformer.{wte,wpe}.weight, transformer.h.N.{ln_1, attn.c_attn, attn.c_proj,
// ln_2, mlp.c_fc, mlp.c_proj}.{weight,bias}, transformer.ln_f.{weight,bias}. HF's Conv1D keeps its
// weights as [in, out], so the four matrices are gradsync's [out, in] transposed. lm_head is tied to
// wte and, as Hugging Face's own save does, not stored. Grouped-query attention has no place there.
// hf, llama flavour: model.embed_tokens.weight, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
// post_attention_layernorm, mlp.{gate,up,down}_proj}.weight, model.norm.weight; q/k/v are the
// rows of gradsync's fused qkv (q heads, k heads, v heads) and gate/up those of its gate_up. Both
// rotate query and key halves (x_i with x_{i+D/2}, "rotate_half"), so no row is permuted. config.json
// sets tie_word_embeddings, rms_norm_eps, rope_theta, num_key_value_heads and head_dim to
// gradsync's values.
// llmc: 256 int32 (magic 20240326, version 3, max_seq_len, vocab_size, num_layers, num_heads,
// channels, padded_vocab_size = vocab rounded up to 128), then wte (padded rows zero), wpe, and
// per kind, stacked over layers: ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb,
// fcprojw, fcprojb; then lnfw, lnfb. [out, in] like gradsync's. gpt2 flavour with kvHeads = heads
// and mlpWidth = 4 width only (llm.c's GPT-2).
//
// The safetensors files hold F32 and carry the resolved model spec (protobuf JSON) in their
// __metadata__ under "gradsync.model", so `gradsync` reads its own exports back without config.json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::ckpt {

enum class WeightsFormat { kHf, kGradsync, kLlmc };

// "hf", "gradsync" or "llmc". INVALID_ARGUMENT "<field>: must be one of hf, gradsync, llmc, got ...".
absl::StatusOr<WeightsFormat> ParseWeightsFormat(absl::string_view name, absl::string_view field);

// The safetensors file of an export directory.
inline constexpr char kSafetensorsFile[] = "model.safetensors";
// The metadata key that holds the model spec.
inline constexpr char kModelMetadataKey[] = "gradsync.model";

// Writes `weights` as `format` to `out` (a directory for hf and gradsync, a file for llmc), each
// file atomically. INVALID_ARGUMENT naming the model field when the format cannot hold the model
// (hf or llmc for the mlp preset, grouped-query attention in gpt2, llm.c's fixed MLP width).
absl::Status ExportWeights(const WeightsFile& weights, WeightsFormat format, const std::string& out);

// What an import gives: the parameters in the model's layout and, from a checkpoint directory,
// the whole rank part (optimizer state included).
struct ImportedWeights {
  std::vector<float> params;
  std::optional<RankState> checkpoint;
  std::string kind;  // what was read: "gradsync weights file", "checkpoint", "safetensors (hf)", ...
};

// Reads the weights at `path` for a model of `model` (resolved spec) whose parameters are laid out
// by `layout`. `path` is a gradsync weights file, a committed checkpoint directory (rank 0's part),
// a safetensors file (or a directory holding model.safetensors) in hf or gradsync names, or an
// llm.c checkpoint. Every tensor the model needs must be there with its shape, and nothing else
// (HF's buffers attn.bias, attn.masked_bias and rotary_emb.inv_freq aside; a stored lm_head must
// equal the tied embedding). INVALID_ARGUMENT naming the path and the tensor, with both shapes, on
// a mismatch; the reader's DATA_LOSS / NOT_FOUND / FAILED_PRECONDITION otherwise.
absl::StatusOr<ImportedWeights> ImportWeights(const std::string& path, const v1::ModelSpec& model,
                                              const nn::ParamLayout& layout);

// A model's weights read from a source that describes the model itself: a gradsync weights file,
// a committed checkpoint directory, an export of `gradsync export` (hf or gradsync), or an llm.c
// checkpoint. INVALID_ARGUMENT naming the path when it holds no model description (a safetensors
// file from elsewhere: use ImportWeights with the model).
absl::StatusOr<WeightsFile> ReadModelWeights(const std::string& path);

// The parameter layout of a transformer model spec (as the models build it). INVALID_ARGUMENT
// naming the field for the mlp preset or an invalid configuration.
absl::StatusOr<nn::ParamLayout> TransformerLayout(const v1::ModelSpec& model);

}  // namespace gradsync::ckpt
