// The transformer's parameters in its ParamLayout, registered in one place for both the CPU
// Transformer (src/transformer.h) and the GPU model (cuda/): each model binds its weights by the
// indices AddTransformerParams returns, never by name, so the two share one layout by
// construction (same names, shapes, offsets, order and decay flags; equal Hash()).
//
// Parameters in forward order (index ranges are what on_ready reports):
//   gpt2:  wte [V, C], wpe [T, C]; per block l: blocks.l.ln1.{weight,bias} [C],
//          blocks.l.attn.qkv.{weight [Q, C], bias [Q]}, blocks.l.attn.proj.{weight [C, C], bias},
//          blocks.l.ln2.{weight,bias}, blocks.l.mlp.fc.{weight [M, C], bias [M]},
//          blocks.l.mlp.proj.{weight [C, M], bias [C]}; lnf.{weight,bias}
//   llama: embed [V, C]; per block: blocks.l.attn_norm.weight, blocks.l.attn.qkv.weight [Q, C],
//          blocks.l.attn.o.weight [C, C], blocks.l.mlp_norm.weight,
//          blocks.l.mlp.gate_up.weight [2M, C] (gate rows first), blocks.l.mlp.down.weight [C, M];
//          norm.weight
// with T the context length and Q = (H + 2 KVH) C / H (TransformerDims). Matrices and embeddings
// decay; norms and biases do not.
#pragma once

#include <utility>
#include <vector>

#include "gradsync/nn/model_config.h"
#include "gradsync/nn/param_gate.h"
#include "gradsync/nn/param_layout.h"

namespace gradsync::nn {

// How InitParams fills a parameter (GPT-2's scheme): N(0, 0.02^2), N(0, (0.02 / sqrt(2 L))^2)
// for the residual output projections, zeros, or ones.
enum class ParamInit { kNormal, kResidual, kZero, kOne };

// Layout indices of one block's parameters; -1 where the flavour has no such parameter.
struct TransformerBlockParams {
  int first = 0, last = 0;  // the block's index range [first, last)
  int norm1_w = -1, norm1_b = -1, qkv_w = -1, qkv_b = -1, attn_out_w = -1, attn_out_b = -1;
  int norm2_w = -1, norm2_b = -1, fc_w = -1, fc_b = -1, mlp_out_w = -1, mlp_out_b = -1;
};

struct TransformerParams {
  int wte = -1, wpe = -1, normf_w = -1, normf_b = -1;  // wpe and normf_b: gpt2 only
  std::vector<TransformerBlockParams> blocks;
  std::vector<ParamInit> init;  // by layout index

  // The embeddings' range is [0, blocks_begin()); the final norm's [normf_w, layout size).
  int blocks_begin() const { return blocks.empty() ? normf_w : blocks.front().first; }

  // The index ranges [first, last) in the order the backward pass finishes them, which is the
  // order on_ready reports: the final norm, each block from the last to the first, then the
  // embeddings (the tied token embedding gets gradient at both ends, so it comes last).
  std::vector<std::pair<int, int>> ReadyRanges(int layout_size) const;

  // The gate's units (gradsync/nn/param_gate.h), in forward order: the embeddings, each block,
  // and the head (the final norm with the tied token embedding). A training pass goes back
  // through the blocks alone: PassOrders(Units(size), 1, 1 + blocks.size()).
  std::vector<ParamUnit> Units(int layout_size) const;
};

// Appends the parameters of a transformer with `dims` to `layout`, which must be empty, in the
// order above, and returns their indices.
TransformerParams AddTransformerParams(const TransformerDims& dims, ParamLayout* layout);

}  // namespace gradsync::nn
