// A decoder-only transformer language model, in two flavours (see gradsync/nn/presets.h):
//
//   gpt2:  wte + wpe -> L x [x += proj(attn(qkv(ln1(x)))); x += proj(gelu(fc(ln2(x))))] -> lnf
//          -> logits = lnf(x) . wte^T  (llm.c's GPT-2: LayerNorm, biases, GELU, learned positions)
//   llama: embed -> L x [x += o(attn(rope(qkv(rms1(x))))); x += down(swiglu(gate_up(rms2(x))))]
//          -> norm -> logits = norm(x) . embed^T  (MiniMind's: RMSNorm, RoPE, SwiGLU, no biases)
//
// Attention is causal and grouped-query (kvHeads divide heads); the loss is softmax
// cross-entropy of every position's next-token logits, targets of -1 ignored.
//
// The dimensions come from TransformerDims (gradsync/nn/model_config.h); the parameters, their
// order and their layout indices from AddTransformerParams (gradsync/nn/transformer_params.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/nn/param_gate.h"
#include "gradsync/nn/transformer_params.h"

namespace gradsync::nn {

class Transformer final : public Model {
 public:
  // Registers the parameters (all zero until InitParams).
  explicit Transformer(const TransformerDims& dims);

  // GPT-2's initialisation: matrices and embeddings ~ N(0, 0.02^2), the two residual output
  // projections of each block ~ N(0, (0.02 / sqrt(2 L))^2), biases 0, norm gains 1. Each
  // parameter draws from its own stream seeded by (seed, parameter index).
  void InitParamRange(uint64_t seed, int first, int last) override;

  // batch.tokens and batch.targets hold size x T values, 1 <= T <= seqLen (normally T =
  // seqLen); tokens in [0, V), targets in [0, V) or -1 (ignored). The loss sum covers every
  // counted position. on_ready reports, in this order: the final norm, each block from the last
  // to the first, then the embeddings (the tied token embedding gets gradient at both ends, so
  // it comes last); also for an empty batch. Not thread-safe: activations live in member
  // buffers, allocated on first use and grown when a batch needs more.
  absl::StatusOr<LossSum> ForwardBackward(const Batch& batch, float loss_scale, const GradsReadyFn& on_ready) override;
  absl::StatusOr<LossSum> Evaluate(const Batch& batch) override;
  // Logits [size, T, V].
  absl::StatusOr<std::vector<float>> Predict(const Batch& batch) override;
  // E.g. "gpt2 L4 H4 C128 M512 T128 V256, 0.84M params".
  std::string Describe() const override;

  // Units, for a gate: the embeddings, each block, and the head (the final norm with the tied
  // token embedding). Forward uses them in that order; backward the head again, then the blocks
  // from the last to the first (the embeddings' backward needs no parameters).
  bool supports_param_gate() const override { return true; }

 private:
  // Forward activations kept for backward (per-layer buffers stack L layers), and backward
  // scratch. Sized for n = B x T tokens by Resize; capacity only grows.
  struct Buffers {
    int64_t batch = 0, seq_len = 0, n = 0;
    std::vector<float> encoded, norm1, norm1_mean, norm1_rstd, qkv, att, atty, res_attn, norm2, norm2_mean, norm2_rstd,
        fc, fc_act, res_mlp;
    std::vector<float> normf, normf_mean, normf_rstd, logits, proj;
    std::vector<float> dres, dnorm, dqkv, datty, dfc, dfc_act, datt;
  };

  // Block l's slices of the per-layer buffers; null where the flavour keeps no such value.
  struct LayerView {
    float *norm1, *norm1_mean, *norm1_rstd, *qkv, *att, *atty, *res_attn, *norm2, *norm2_mean, *norm2_rstd, *fc,
        *fc_act, *res_mlp;
  };

  float* P(int index);
  float* G(int index);
  // Checks the batch and returns T, its sequence length (0 for an empty batch).
  absl::StatusOr<int64_t> CheckBatch(const Batch& batch, bool need_targets) const;
  void Resize(int64_t batch, int64_t seq_len, bool backward);
  LayerView Layer(int l);
  // Runs every layer on the tokens, leaving the logits in buf_.logits and the head held by `pass`.
  absl::Status Forward(const int32_t* tokens, GatedPass& pass);
  void BlockForward(int l, const float* x);
  // Takes the gradient of block l's output in buf_.dres and leaves that of its input there.
  void BlockBackward(int l, const float* x);
  void NormForward(float* out, float* mean, float* rstd, const float* inp, int w, int b);
  void NormBackward(float* dinp, int w, int b, const float* dout, const float* inp, const float* mean,
                    const float* rstd);
  void ReportAll(const GradsReadyFn& on_ready) const;

  TransformerDims dims_;
  TransformerParams index_;                 // layout indices of every parameter, and how each starts
  std::vector<float> rope_cos_, rope_sin_;  // llama: [seqLen, D / 2]
  Buffers buf_;
  // The gate's units (embeddings, blocks, head) and the orders a training and a forward-only
  // pass use them in.
  PassOrders orders_;
};

}  // namespace gradsync::nn
