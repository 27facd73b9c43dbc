#include "tensor_slots.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gradsync/nn/presets.h"
#include "gradsync/nn/transformer_params.h"

namespace gradsync::ckpt {
namespace {

int64_t Rows(const nn::ParamInfo& p) { return p.shape.empty() ? 1 : p.shape[0]; }
int64_t Cols(const nn::ParamInfo& p) { return Rows(p) == 0 ? 0 : p.numel / Rows(p); }

TensorSlot Whole(std::string name, int param, const nn::ParamLayout& layout, bool transpose = false) {
  return {std::move(name), param, 0, Rows(layout.param(param)), transpose};
}

void AddGpt2Block(const std::string& p, const nn::TransformerBlockParams& b, const nn::ParamLayout& layout,
                  std::vector<TensorSlot>* out) {
  out->push_back(Whole(p + "ln_1.weight", b.norm1_w, layout));
  out->push_back(Whole(p + "ln_1.bias", b.norm1_b, layout));
  out->push_back(Whole(p + "attn.c_attn.weight", b.qkv_w, layout, true));
  out->push_back(Whole(p + "attn.c_attn.bias", b.qkv_b, layout));
  out->push_back(Whole(p + "attn.c_proj.weight", b.attn_out_w, layout, true));
  out->push_back(Whole(p + "attn.c_proj.bias", b.attn_out_b, layout));
  out->push_back(Whole(p + "ln_2.weight", b.norm2_w, layout));
  out->push_back(Whole(p + "ln_2.bias", b.norm2_b, layout));
  out->push_back(Whole(p + "mlp.c_fc.weight", b.fc_w, layout, true));
  out->push_back(Whole(p + "mlp.c_fc.bias", b.fc_b, layout));
  out->push_back(Whole(p + "mlp.c_proj.weight", b.mlp_out_w, layout, true));
  out->push_back(Whole(p + "mlp.c_proj.bias", b.mlp_out_b, layout));
}

void AddLlamaBlock(const std::string& p, const nn::TransformerDims& d, const nn::TransformerBlockParams& b,
                   const nn::ParamLayout& layout, std::vector<TensorSlot>* out) {
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim, m = d.mlp_width;
  out->push_back(Whole(p + "input_layernorm.weight", b.norm1_w, layout));
  out->push_back({p + "self_attn.q_proj.weight", b.qkv_w, 0, q, false});
  out->push_back({p + "self_attn.k_proj.weight", b.qkv_w, q, q + kv, false});
  out->push_back({p + "self_attn.v_proj.weight", b.qkv_w, q + kv, q + 2 * kv, false});
  out->push_back(Whole(p + "self_attn.o_proj.weight", b.attn_out_w, layout));
  out->push_back(Whole(p + "post_attention_layernorm.weight", b.norm2_w, layout));
  out->push_back({p + "mlp.gate_proj.weight", b.fc_w, 0, m, false});
  out->push_back({p + "mlp.up_proj.weight", b.fc_w, m, 2 * m, false});
  out->push_back(Whole(p + "mlp.down_proj.weight", b.mlp_out_w, layout));
}

absl::StatusOr<std::vector<TensorSlot>> HfSlots(const v1::ModelSpec& model, const nn::ParamLayout& layout,
                                                bool prefix) {
  absl::StatusOr<nn::TransformerDims> dims = DimsOf(model);
  if (!dims.ok()) return dims.status();
  nn::ParamLayout scratch;
  const nn::TransformerParams index = nn::AddTransformerParams(*dims, &scratch);
  if (scratch.Hash() != layout.Hash()) {
    return absl::InvalidArgumentError("the parameter layout is not the one its model spec describes");
  }
  std::vector<TensorSlot> out;
  if (dims->gpt2()) {
    if (dims->kv_heads != dims->heads) {
      return absl::InvalidArgumentError(absl::StrCat("model.transformer.kvHeads: ", dims->kv_heads,
                                                     " key/value heads for ", dims->heads,
                                                     " heads; Hugging Face's GPT2LMHeadModel has no grouped-query "
                                                     "attention"));
    }
    const std::string t = prefix ? "transformer." : "";
    out.push_back(Whole(t + "wte.weight", index.wte, layout));
    out.push_back(Whole(t + "wpe.weight", index.wpe, layout));
    for (size_t l = 0; l < index.blocks.size(); ++l) {
      AddGpt2Block(absl::StrCat(t, "h.", l, "."), index.blocks[l], layout, &out);
    }
    out.push_back(Whole(t + "ln_f.weight", index.normf_w, layout));
    out.push_back(Whole(t + "ln_f.bias", index.normf_b, layout));
    return out;
  }
  out.push_back(Whole("model.embed_tokens.weight", index.wte, layout));
  for (size_t l = 0; l < index.blocks.size(); ++l) {
    AddLlamaBlock(absl::StrCat("model.layers.", l, "."), *dims, index.blocks[l], layout, &out);
  }
  out.push_back(Whole("model.norm.weight", index.normf_w, layout));
  return out;
}

}  // namespace

absl::StatusOr<nn::TransformerDims> DimsOf(const v1::ModelSpec& model) {
  if (!nn::IsTransformerPreset(model.preset())) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.preset: \"", model.preset(), "\" is no transformer; only gradsync's own names fit it"));
  }
  absl::StatusOr<v1::TransformerConfig> config = nn::ResolveTransformerConfig(model);
  if (!config.ok()) return config.status();
  return nn::TransformerDims::FromConfig(*config);
}

absl::StatusOr<std::vector<TensorSlot>> Slots(const v1::ModelSpec& model, const nn::ParamLayout& layout,
                                              SlotNames names, bool hf_prefix) {
  if (names == SlotNames::kHf) return HfSlots(model, layout, hf_prefix);
  std::vector<TensorSlot> out;
  for (int i = 0; i < layout.size(); ++i) out.push_back(Whole(layout.param(i).name, i, layout));
  return out;
}

std::vector<int64_t> SlotShape(const TensorSlot& slot, const nn::ParamLayout& layout) {
  const nn::ParamInfo& p = layout.param(slot.param);
  const int64_t rows = slot.row_end - slot.row_begin;
  if (slot.row_begin == 0 && slot.row_end == Rows(p)) {
    if (!slot.transpose || p.shape.size() != 2) return p.shape;
    return {p.shape[1], p.shape[0]};
  }
  std::vector<int64_t> shape = p.shape;
  shape[0] = rows;
  return slot.transpose && shape.size() == 2 ? std::vector<int64_t>{shape[1], shape[0]} : shape;
}

NamedTensor Extract(const TensorSlot& slot, const nn::ParamLayout& layout, std::span<const float> params) {
  const nn::ParamInfo& p = layout.param(slot.param);
  const int64_t cols = Cols(p), rows = slot.row_end - slot.row_begin;
  NamedTensor t{slot.name, SlotShape(slot, layout), std::vector<float>(rows * cols)};
  const float* src = params.data() + p.offset + slot.row_begin * cols;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t.values[slot.transpose ? c * rows + r : r * cols + c] = src[r * cols + c];
  }
  return t;
}

void Insert(const TensorSlot& slot, const nn::ParamLayout& layout, std::span<const float> values,
            std::span<float> params) {
  const nn::ParamInfo& p = layout.param(slot.param);
  const int64_t cols = Cols(p), rows = slot.row_end - slot.row_begin;
  float* dst = params.data() + p.offset + slot.row_begin * cols;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = values[slot.transpose ? c * rows + r : r * cols + c];
  }
}

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

}  // namespace gradsync::ckpt
