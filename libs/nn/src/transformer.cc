#include "transformer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gradsync/core/rng.h"
#include "gradsync/kernels/cpu/encoder.h"
#include "gradsync/kernels/cpu/matmul.h"
#include "gradsync/kernels/cpu/rope.h"
#include "gradsync/nn/token_batch.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gradsync/nn/presets.h"

namespace gradsync::nn {
namespace {

namespace k = gradsync::kernels::cpu;

constexpr double kInitStd = 0.02;

}  // namespace

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(
    const gradsync::v1::ModelSpec& model) {
  absl::StatusOr<gradsync::v1::TransformerConfig> config = ResolveTransformerConfig(model);
  if (!config.ok()) return config.status();
  if (absl::Status s = ValidateTransformerConfig(*config); !s.ok()) return s;
  return std::make_unique<Transformer>(*config);
}

Transformer::Transformer(const gradsync::v1::TransformerConfig& config)
    : config_(config),
      gpt2_(config.flavour() == "gpt2"),
      layers_(config.layers()),
      heads_(config.heads()),
      kv_heads_(config.kv_heads()),
      width_(config.width()),
      head_dim_(config.width() / config.heads()),
      mlp_width_(config.mlp_width()),
      max_seq_len_(config.seq_len()),
      vocab_(config.vocab_size()),
      qkv_width_((heads_ + 2 * kv_heads_) * head_dim_),
      fc_width_(gpt2_ ? mlp_width_ : 2 * mlp_width_) {
  const int64_t C = width_;
  wte_ = AddParam(gpt2_ ? "wte" : "embed", {vocab_, C}, true, Init::kNormal);
  if (gpt2_) wpe_ = AddParam("wpe", {max_seq_len_, C}, true, Init::kNormal);
  for (int l = 0; l < layers_; ++l) {
    const std::string p = absl::StrCat("blocks.", l, ".");
    Block b;
    b.first = layout().size();
    if (gpt2_) {
      b.norm1_w = AddParam(p + "ln1.weight", {C}, false, Init::kOne);
      b.norm1_b = AddParam(p + "ln1.bias", {C}, false, Init::kZero);
      b.qkv_w = AddParam(p + "attn.qkv.weight", {qkv_width_, C}, true, Init::kNormal);
      b.qkv_b = AddParam(p + "attn.qkv.bias", {qkv_width_}, false, Init::kZero);
      b.attn_out_w = AddParam(p + "attn.proj.weight", {C, C}, true, Init::kResidual);
      b.attn_out_b = AddParam(p + "attn.proj.bias", {C}, false, Init::kZero);
      b.norm2_w = AddParam(p + "ln2.weight", {C}, false, Init::kOne);
      b.norm2_b = AddParam(p + "ln2.bias", {C}, false, Init::kZero);
      b.fc_w = AddParam(p + "mlp.fc.weight", {mlp_width_, C}, true, Init::kNormal);
      b.fc_b = AddParam(p + "mlp.fc.bias", {mlp_width_}, false, Init::kZero);
      b.mlp_out_w = AddParam(p + "mlp.proj.weight", {C, mlp_width_}, true, Init::kResidual);
      b.mlp_out_b = AddParam(p + "mlp.proj.bias", {C}, false, Init::kZero);
    } else {
      b.norm1_w = AddParam(p + "attn_norm.weight", {C}, false, Init::kOne);
      b.qkv_w = AddParam(p + "attn.qkv.weight", {qkv_width_, C}, true, Init::kNormal);
      b.attn_out_w = AddParam(p + "attn.o.weight", {C, C}, true, Init::kResidual);
      b.norm2_w = AddParam(p + "mlp_norm.weight", {C}, false, Init::kOne);
      b.fc_w = AddParam(p + "mlp.gate_up.weight", {fc_width_, C}, true, Init::kNormal);
      b.mlp_out_w = AddParam(p + "mlp.down.weight", {C, mlp_width_}, true, Init::kResidual);
    }
    b.last = layout().size();
    blocks_.push_back(b);
  }
  normf_w_ = AddParam(gpt2_ ? "lnf.weight" : "norm.weight", {C}, false, Init::kOne);
  if (gpt2_) normf_b_ = AddParam("lnf.bias", {C}, false, Init::kZero);
  AllocateBuffers();
  if (!gpt2_) {
    rope_cos_.resize(max_seq_len_ * head_dim_ / 2);
    rope_sin_.resize(rope_cos_.size());
    k::RopeTables(rope_cos_.data(), rope_sin_.data(), max_seq_len_, head_dim_, config.rope_theta());
  }
}

int Transformer::AddParam(std::string name, std::vector<int64_t> shape, bool decay, Init init) {
  init_.push_back(init);
  return mutable_layout().Add(std::move(name), std::move(shape), decay);
}

float* Transformer::P(int index) {
  return index < 0 ? nullptr : params().data() + layout().param(index).offset;
}

float* Transformer::G(int index) {
  return index < 0 ? nullptr : grads().data() + layout().param(index).offset;
}

void Transformer::InitParams(uint64_t seed) {
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(layers_));
  for (int i = 0; i < layout().size(); ++i) {
    std::span<float> p = layout().View(params(), i);
    switch (init_[i]) {
      case Init::kZero:
        std::fill(p.begin(), p.end(), 0.0f);
        break;
      case Init::kOne:
        std::fill(p.begin(), p.end(), 1.0f);
        break;
      case Init::kNormal:
      case Init::kResidual: {
        const double std = init_[i] == Init::kNormal ? kInitStd : residual_std;
        Rng rng(HashCombine(seed, static_cast<uint64_t>(i)));
        for (float& x : p) x = static_cast<float>(std * rng.Normal());
        break;
      }
    }
  }
}

absl::StatusOr<int64_t> Transformer::CheckBatch(const Batch& batch, bool need_targets) const {
  return CheckTokenBatch(batch, need_targets, max_seq_len_, vocab_);
}

void Transformer::Resize(int64_t batch, int64_t seq_len, bool backward) {
  Buffers& b = buf_;
  const int64_t n = batch * seq_len, C = width_, L = layers_;
  b.batch = batch;
  b.seq_len = seq_len;
  b.n = n;
  b.encoded.resize(n * C);
  for (auto* v : {&b.norm1, &b.atty, &b.res_attn, &b.norm2, &b.res_mlp}) v->resize(L * n * C);
  for (auto* v : {&b.norm1_rstd, &b.norm2_rstd}) v->resize(L * n);
  if (gpt2_) {
    for (auto* v : {&b.norm1_mean, &b.norm2_mean}) v->resize(L * n);
    b.normf_mean.resize(n);
  }
  b.qkv.resize(L * n * qkv_width_);
  b.att.resize(L * batch * heads_ * seq_len * seq_len);
  b.fc.resize(L * n * fc_width_);
  b.fc_act.resize(L * n * mlp_width_);
  b.normf.resize(n * C);
  b.normf_rstd.resize(n);
  b.logits.resize(n * vocab_);
  b.proj.resize(n * C);
  if (!backward) return;
  for (auto* v : {&b.dres, &b.dnorm, &b.datty}) v->resize(n * C);
  b.dqkv.resize(n * qkv_width_);
  b.dfc.resize(n * fc_width_);
  b.dfc_act.resize(n * mlp_width_);
  b.datt.resize(seq_len * seq_len);
}

void Transformer::Forward(const int32_t* tokens) {
  Buffers& b = buf_;
  const int64_t n = b.n, C = width_;
  k::EncoderForward(b.encoded.data(), tokens, P(wte_), P(wpe_), b.batch, b.seq_len, C);
  const float* x = b.encoded.data();
  for (int l = 0; l < layers_; ++l) {
    BlockForward(l, x);
    x = b.res_mlp.data() + l * n * C;
  }
  NormForward(b.normf.data(), gpt2_ ? b.normf_mean.data() : nullptr, b.normf_rstd.data(), x,
              normf_w_, normf_b_);
  k::MatmulForward<float>(b.logits.data(), b.normf.data(), P(wte_), nullptr, n, C, vocab_);
}

void Transformer::ReportAll(const GradsReadyFn& on_ready) const {
  if (!on_ready) return;
  on_ready(normf_w_, layout().size());
  for (int l = static_cast<int>(layers_) - 1; l >= 0; --l) {
    on_ready(blocks_[l].first, blocks_[l].last);
  }
  on_ready(0, blocks_.empty() ? normf_w_ : blocks_[0].first);
}

absl::StatusOr<LossSum> Transformer::ForwardBackward(const Batch& batch, float loss_scale,
                                                     const GradsReadyFn& on_ready) {
  absl::StatusOr<int64_t> t = CheckBatch(batch, /*need_targets=*/true);
  if (!t.ok()) return t.status();
  if (batch.size == 0) {
    ReportAll(on_ready);
    return LossSum{};
  }
  Resize(batch.size, *t, /*backward=*/true);
  Forward(batch.tokens.data());
  Buffers& b = buf_;
  const int64_t n = b.n, C = width_;
  // The gradient replaces the logits in place.
  const k::XentSum xent = k::SoftmaxCrossEntropy(b.logits.data(), b.logits.data(),
                                                 batch.targets.data(), n, vocab_, loss_scale);
  std::fill(b.dnorm.begin(), b.dnorm.end(), 0.0f);
  k::MatmulBackward<float>(b.dnorm.data(), G(wte_), nullptr, b.logits.data(), b.normf.data(),
                           P(wte_), n, C, vocab_);
  std::fill(b.dres.begin(), b.dres.end(), 0.0f);
  const float* last = layers_ == 0 ? b.encoded.data() : b.res_mlp.data() + (layers_ - 1) * n * C;
  NormBackward(b.dres.data(), normf_w_, normf_b_, b.dnorm.data(), last,
               gpt2_ ? b.normf_mean.data() : nullptr, b.normf_rstd.data());
  if (on_ready) on_ready(normf_w_, layout().size());
  for (int l = static_cast<int>(layers_) - 1; l >= 0; --l) {
    BlockBackward(l, l == 0 ? b.encoded.data() : b.res_mlp.data() + (l - 1) * n * C);
    if (on_ready) on_ready(blocks_[l].first, blocks_[l].last);
  }
  k::EncoderBackward(G(wte_), G(wpe_), b.dres.data(), batch.tokens.data(), b.batch, b.seq_len, C);
  if (on_ready) on_ready(0, blocks_.empty() ? normf_w_ : blocks_[0].first);
  return LossSum{xent.loss_sum, xent.count};
}

absl::StatusOr<LossSum> Transformer::Evaluate(const Batch& batch) {
  absl::StatusOr<int64_t> t = CheckBatch(batch, /*need_targets=*/true);
  if (!t.ok()) return t.status();
  if (batch.size == 0) return LossSum{};
  Resize(batch.size, *t, /*backward=*/false);
  Forward(batch.tokens.data());
  const k::XentSum xent = k::SoftmaxCrossEntropy<float>(nullptr, buf_.logits.data(),
                                                        batch.targets.data(), buf_.n, vocab_, 1.0f);
  return LossSum{xent.loss_sum, xent.count};
}

absl::StatusOr<std::vector<float>> Transformer::Predict(const Batch& batch) {
  absl::StatusOr<int64_t> t = CheckBatch(batch, /*need_targets=*/false);
  if (!t.ok()) return t.status();
  if (batch.size == 0) return std::vector<float>{};
  Resize(batch.size, *t, /*backward=*/false);
  Forward(batch.tokens.data());
  return std::vector<float>(buf_.logits.begin(), buf_.logits.begin() + buf_.n * vocab_);
}

std::string Transformer::Describe() const { return DescribeTransformer(config_); }

}  // namespace gradsync::nn
