// ExportWeights: safetensors with config.json (hf, gradsync) or llm.c's checkpoint (llmc).
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "file_io.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/nn/transformer_params.h"
#include "llmc_file.h"
#include "tensor_slots.h"

namespace gradsync::ckpt {
namespace {

using google::protobuf::Struct;

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

void SetArchitecture(Struct* s, const char* architecture, const char* type) {
  auto& f = *s->mutable_fields();
  f["architectures"].mutable_list_value()->add_values()->set_string_value(architecture);
  f["model_type"].set_string_value(type);
  f["torch_dtype"].set_string_value("float32");
  f["tie_word_embeddings"].set_bool_value(true);
  f["use_cache"].set_bool_value(true);
  f["initializer_range"].set_number_value(0.02);
}

// GPT2Config: GELU with tanh ("gelu_new"), no dropout, 1/sqrt(head dim) attention scaling.
Struct Gpt2Config(const nn::TransformerDims& d) {
  Struct s;
  SetArchitecture(&s, "GPT2LMHeadModel", "gpt2");
  auto& f = *s.mutable_fields();
  f["vocab_size"].set_number_value(static_cast<double>(d.vocab));
  f["n_positions"].set_number_value(static_cast<double>(d.seq_len));
  f["n_ctx"].set_number_value(static_cast<double>(d.seq_len));
  f["n_embd"].set_number_value(static_cast<double>(d.width));
  f["n_layer"].set_number_value(static_cast<double>(d.layers));
  f["n_head"].set_number_value(static_cast<double>(d.heads));
  f["n_inner"].set_number_value(static_cast<double>(d.mlp_width));
  f["activation_function"].set_string_value("gelu_new");
  f["layer_norm_epsilon"].set_number_value(d.norm_eps);
  for (const char* p : {"resid_pdrop", "embd_pdrop", "attn_pdrop"}) f[p].set_number_value(0.0);
  f["scale_attn_weights"].set_bool_value(true);
  return s;
}

// LlamaConfig: SiLU-gated MLP, no biases, rotary on the full head dimension without scaling.
Struct LlamaConfig(const nn::TransformerDims& d) {
  Struct s;
  SetArchitecture(&s, "LlamaForCausalLM", "llama");
  auto& f = *s.mutable_fields();
  f["vocab_size"].set_number_value(static_cast<double>(d.vocab));
  f["hidden_size"].set_number_value(static_cast<double>(d.width));
  f["intermediate_size"].set_number_value(static_cast<double>(d.mlp_width));
  f["num_hidden_layers"].set_number_value(static_cast<double>(d.layers));
  f["num_attention_heads"].set_number_value(static_cast<double>(d.heads));
  f["num_key_value_heads"].set_number_value(static_cast<double>(d.kv_heads));
  f["head_dim"].set_number_value(static_cast<double>(d.head_dim));
  f["max_position_embeddings"].set_number_value(static_cast<double>(d.seq_len));
  f["rms_norm_eps"].set_number_value(d.norm_eps);
  f["rope_theta"].set_number_value(d.rope_theta);
  f["rope_scaling"].set_null_value(google::protobuf::NULL_VALUE);
  f["hidden_act"].set_string_value("silu");
  f["attention_bias"].set_bool_value(false);
  f["mlp_bias"].set_bool_value(false);
  return s;
}

absl::Status ExportSafetensors(const WeightsFile& w, SlotNames names, const std::string& dir) {
  absl::StatusOr<std::vector<TensorSlot>> slots = Slots(w.model, w.layout, names);
  if (!slots.ok()) return slots.status();
  std::vector<NamedTensor> tensors;
  for (const TensorSlot& slot : *slots) tensors.push_back(Extract(slot, w.layout, w.values));
  const std::string model_json = ToJson(w.model);
  const std::filesystem::path out(dir);
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {kModelMetadataKey, model_json}};
  if (absl::Status s = WriteSafetensors((out / kSafetensorsFile).string(), tensors, metadata); !s.ok()) return s;
  std::string config = model_json;
  if (names == SlotNames::kHf) {
    absl::StatusOr<nn::TransformerDims> d = DimsOf(w.model);
    if (!d.ok()) return d.status();
    config = ToJson(d->gpt2() ? Gpt2Config(*d) : LlamaConfig(*d));
  }
  return WriteFileAtomically((out / "config.json").string(), config + "\n");
}

}  // namespace

absl::StatusOr<WeightsFormat> ParseWeightsFormat(absl::string_view name, absl::string_view field) {
  if (name == "hf") return WeightsFormat::kHf;
  if (name == "gradsync") return WeightsFormat::kGradsync;
  if (name == "llmc") return WeightsFormat::kLlmc;
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be one of hf, gradsync, llmc, got \"", name, "\""));
}

absl::Status ExportWeights(const WeightsFile& weights, WeightsFormat format, const std::string& out) {
  if (static_cast<int64_t>(weights.values.size()) != weights.layout.total_numel()) {
    return absl::InvalidArgumentError(
        absl::StrCat(weights.values.size(), " values for a layout of ", weights.layout.total_numel()));
  }
  switch (format) {
    case WeightsFormat::kHf: return ExportSafetensors(weights, SlotNames::kHf, out);
    case WeightsFormat::kGradsync: return ExportSafetensors(weights, SlotNames::kGradsync, out);
    case WeightsFormat::kLlmc: return WriteLlmcCheckpoint(out, weights.model, weights.layout, weights.values);
  }
  return absl::InvalidArgumentError("unknown weights format");
}

absl::StatusOr<nn::ParamLayout> TransformerLayout(const v1::ModelSpec& model) {
  absl::StatusOr<nn::TransformerDims> d = DimsOf(model);
  if (!d.ok()) return d.status();
  nn::ParamLayout layout;
  nn::AddTransformerParams(*d, &layout);
  return layout;
}

}  // namespace gradsync::ckpt
