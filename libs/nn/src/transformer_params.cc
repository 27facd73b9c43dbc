#include "gradsync/nn/transformer_params.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync::nn {
namespace {

// Appends to the layout and records how the parameter starts.
class Registrar {
 public:
  Registrar(ParamLayout* layout, TransformerParams* out) : layout_(layout), out_(out) {}

  int Add(std::string name, std::vector<int64_t> shape, bool decay, ParamInit init) {
    out_->init.push_back(init);
    return layout_->Add(std::move(name), std::move(shape), decay);
  }
  int size() const { return layout_->size(); }

 private:
  ParamLayout* layout_;
  TransformerParams* out_;
};

TransformerBlockParams AddBlock(const TransformerDims& d, int l, Registrar& r) {
  const std::string p = absl::StrCat("blocks.", l, ".");
  const int64_t C = d.width, M = d.mlp_width, Q = d.qkv_width, F = d.fc_width;
  TransformerBlockParams b;
  b.first = r.size();
  if (d.gpt2()) {
    b.norm1_w = r.Add(p + "ln1.weight", {C}, false, ParamInit::kOne);
    b.norm1_b = r.Add(p + "ln1.bias", {C}, false, ParamInit::kZero);
    b.qkv_w = r.Add(p + "attn.qkv.weight", {Q, C}, true, ParamInit::kNormal);
    b.qkv_b = r.Add(p + "attn.qkv.bias", {Q}, false, ParamInit::kZero);
    b.attn_out_w = r.Add(p + "attn.proj.weight", {C, C}, true, ParamInit::kResidual);
    b.attn_out_b = r.Add(p + "attn.proj.bias", {C}, false, ParamInit::kZero);
    b.norm2_w = r.Add(p + "ln2.weight", {C}, false, ParamInit::kOne);
    b.norm2_b = r.Add(p + "ln2.bias", {C}, false, ParamInit::kZero);
    b.fc_w = r.Add(p + "mlp.fc.weight", {F, C}, true, ParamInit::kNormal);
    b.fc_b = r.Add(p + "mlp.fc.bias", {F}, false, ParamInit::kZero);
    b.mlp_out_w = r.Add(p + "mlp.proj.weight", {C, M}, true, ParamInit::kResidual);
    b.mlp_out_b = r.Add(p + "mlp.proj.bias", {C}, false, ParamInit::kZero);
  } else {
    b.norm1_w = r.Add(p + "attn_norm.weight", {C}, false, ParamInit::kOne);
    b.qkv_w = r.Add(p + "attn.qkv.weight", {Q, C}, true, ParamInit::kNormal);
    b.attn_out_w = r.Add(p + "attn.o.weight", {C, C}, true, ParamInit::kResidual);
    b.norm2_w = r.Add(p + "mlp_norm.weight", {C}, false, ParamInit::kOne);
    b.fc_w = r.Add(p + "mlp.gate_up.weight", {F, C}, true, ParamInit::kNormal);
    b.mlp_out_w = r.Add(p + "mlp.down.weight", {C, M}, true, ParamInit::kResidual);
  }
  b.last = r.size();
  return b;
}

}  // namespace

std::vector<std::pair<int, int>> TransformerParams::ReadyRanges(int layout_size) const {
  std::vector<std::pair<int, int>> ranges = {{normf_w, layout_size}};
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) ranges.emplace_back(b->first, b->last);
  ranges.emplace_back(0, blocks_begin());
  return ranges;
}

std::vector<ParamUnit> TransformerParams::Units(int layout_size) const {
  std::vector<ParamUnit> units = {{{0, blocks_begin()}}};
  for (const TransformerBlockParams& block : blocks) units.push_back({{block.first, block.last}});
  units.push_back({{normf_w, layout_size}, {wte, wte + 1}});
  return units;
}

TransformerParams AddTransformerParams(const TransformerDims& dims, ParamLayout* layout) {
  TransformerParams params;
  Registrar r(layout, &params);
  const bool gpt2 = dims.gpt2();
  const int64_t C = dims.width;
  params.wte = r.Add(gpt2 ? "wte" : "embed", {dims.vocab, C}, true, ParamInit::kNormal);
  if (gpt2) params.wpe = r.Add("wpe", {dims.seq_len, C}, true, ParamInit::kNormal);
  for (int l = 0; l < dims.layers; ++l) params.blocks.push_back(AddBlock(dims, l, r));
  params.normf_w = r.Add(gpt2 ? "lnf.weight" : "norm.weight", {C}, false, ParamInit::kOne);
  if (gpt2) params.normf_b = r.Add("lnf.bias", {C}, false, ParamInit::kZero);
  return params;
}

}  // namespace gradsync::nn
