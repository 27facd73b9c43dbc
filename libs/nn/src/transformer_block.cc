// One transformer block, forward and backward, for both flavours; see transformer.h.
#include "gradsync/kernels/cpu/attention.h"
#include "gradsync/kernels/cpu/gelu.h"
#include "gradsync/kernels/cpu/layernorm.h"
#include "gradsync/kernels/cpu/matmul.h"
#include "gradsync/kernels/cpu/residual.h"
#include "gradsync/kernels/cpu/rmsnorm.h"
#include "gradsync/kernels/cpu/rope.h"
#include "gradsync/kernels/cpu/swiglu.h"
#include "transformer.h"

namespace gradsync::nn {
namespace {

namespace k = gradsync::kernels::cpu;

void Zero(std::vector<float>& v) { std::fill(v.begin(), v.end(), 0.0f); }

}  // namespace

Transformer::LayerView Transformer::Layer(int l) {
  Buffers& b = buf_;
  const int64_t n = b.n, nc = n * dims_.width;
  auto at = [l](std::vector<float>& v, int64_t per_layer) { return v.empty() ? nullptr : v.data() + l * per_layer; };
  return {at(b.norm1, nc),
          at(b.norm1_mean, n),
          at(b.norm1_rstd, n),
          at(b.qkv, n * dims_.qkv_width),
          at(b.att, b.batch * dims_.heads * b.seq_len * b.seq_len),
          at(b.atty, nc),
          at(b.res_attn, nc),
          at(b.norm2, nc),
          at(b.norm2_mean, n),
          at(b.norm2_rstd, n),
          at(b.fc, n * dims_.fc_width),
          at(b.fc_act, n * dims_.mlp_width),
          at(b.res_mlp, nc)};
}

void Transformer::NormForward(float* out, float* mean, float* rstd, const float* inp, int w, int b) {
  if (dims_.gpt2()) {
    k::LayerNormForward(out, mean, rstd, inp, P(w), P(b), buf_.n, dims_.width, dims_.norm_eps);
  } else {
    k::RmsNormForward(out, rstd, inp, P(w), buf_.n, dims_.width, dims_.norm_eps);
  }
}

void Transformer::NormBackward(float* dinp, int w, int b, const float* dout, const float* inp, const float* mean,
                               const float* rstd) {
  if (dims_.gpt2()) {
    k::LayerNormBackward(dinp, G(w), G(b), dout, inp, P(w), mean, rstd, buf_.n, dims_.width);
  } else {
    k::RmsNormBackward(dinp, G(w), dout, inp, P(w), rstd, buf_.n, dims_.width);
  }
}

void Transformer::BlockForward(int l, const float* x) {
  const TransformerBlockParams& p = index_.blocks[l];
  const LayerView a = Layer(l);
  Buffers& b = buf_;
  const int64_t n = b.n, C = dims_.width, M = dims_.mlp_width;
  const kernels::AttentionShape shape = dims_.Attention(b.batch, b.seq_len);

  NormForward(a.norm1, a.norm1_mean, a.norm1_rstd, x, p.norm1_w, p.norm1_b);
  k::MatmulForward(a.qkv, a.norm1, P(p.qkv_w), P(p.qkv_b), n, C, dims_.qkv_width);
  if (!dims_.gpt2()) {
    k::RopeForward(a.qkv, rope_cos_.data(), rope_sin_.data(), b.batch, b.seq_len, dims_.heads + dims_.kv_heads,
                   dims_.head_dim, dims_.qkv_width);
  }
  k::AttentionForward(a.atty, a.att, a.qkv, shape);
  k::MatmulForward(b.proj.data(), a.atty, P(p.attn_out_w), P(p.attn_out_b), n, C, C);
  k::ResidualForward(a.res_attn, x, b.proj.data(), n * C);

  NormForward(a.norm2, a.norm2_mean, a.norm2_rstd, a.res_attn, p.norm2_w, p.norm2_b);
  k::MatmulForward(a.fc, a.norm2, P(p.fc_w), P(p.fc_b), n, C, dims_.fc_width);
  if (dims_.gpt2()) {
    k::GeluForward(a.fc_act, a.fc, n * M);
  } else {
    k::SwiGluForward(a.fc_act, a.fc, n, M);
  }
  k::MatmulForward(b.proj.data(), a.fc_act, P(p.mlp_out_w), P(p.mlp_out_b), n, M, C);
  k::ResidualForward(a.res_mlp, a.res_attn, b.proj.data(), n * C);
}

void Transformer::BlockBackward(int l, const float* x) {
  const TransformerBlockParams& p = index_.blocks[l];
  const LayerView a = Layer(l);
  Buffers& b = buf_;
  const int64_t n = b.n, C = dims_.width, M = dims_.mlp_width;
  const kernels::AttentionShape shape = dims_.Attention(b.batch, b.seq_len);
  float* dres = b.dres.data();

  // res_mlp = res_attn + mlp_out: dres is the gradient of both terms, and stays in place as the
  // gradient of res_attn while the MLP branch adds to it.
  Zero(b.dfc_act);
  k::MatmulBackward(b.dfc_act.data(), G(p.mlp_out_w), G(p.mlp_out_b), dres, a.fc_act, P(p.mlp_out_w), n, M, C);
  Zero(b.dfc);
  if (dims_.gpt2()) {
    k::GeluBackward(b.dfc.data(), a.fc, b.dfc_act.data(), n * M);
  } else {
    k::SwiGluBackward(b.dfc.data(), a.fc, b.dfc_act.data(), n, M);
  }
  Zero(b.dnorm);
  k::MatmulBackward(b.dnorm.data(), G(p.fc_w), G(p.fc_b), b.dfc.data(), a.norm2, P(p.fc_w), n, C, dims_.fc_width);
  NormBackward(dres, p.norm2_w, p.norm2_b, b.dnorm.data(), a.res_attn, a.norm2_mean, a.norm2_rstd);

  // res_attn = x + attn_out, likewise.
  Zero(b.datty);
  k::MatmulBackward(b.datty.data(), G(p.attn_out_w), G(p.attn_out_b), dres, a.atty, P(p.attn_out_w), n, C, C);
  Zero(b.dqkv);
  k::AttentionBackward(b.dqkv.data(), b.datt.data(), b.datty.data(), a.qkv, a.att, shape);
  if (!dims_.gpt2()) {
    k::RopeBackward(b.dqkv.data(), rope_cos_.data(), rope_sin_.data(), b.batch, b.seq_len, dims_.heads + dims_.kv_heads,
                    dims_.head_dim, dims_.qkv_width);
  }
  Zero(b.dnorm);
  k::MatmulBackward(b.dnorm.data(), G(p.qkv_w), G(p.qkv_b), b.dqkv.data(), a.norm1, P(p.qkv_w), n, C, dims_.qkv_width);
  NormBackward(dres, p.norm1_w, p.norm1_b, b.dnorm.data(), x, a.norm1_mean, a.norm1_rstd);
}

}  // namespace gradsync::nn
