#include "transformer.h"

#include <algorithm>
#include <cmath>

#include "gradsync/core/rng.h"
#include "gradsync/kernels/cpu/encoder.h"
#include "gradsync/kernels/cpu/matmul.h"
#include "gradsync/kernels/cpu/rope.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gradsync/nn/presets.h"
#include "gradsync/nn/token_batch.h"

namespace gradsync::nn {
namespace {

namespace k = gradsync::kernels::cpu;

constexpr double kInitStd = 0.02;

}  // namespace

Transformer::Transformer(const TransformerDims& dims)
    : dims_(dims),
      index_(AddTransformerParams(dims, &mutable_layout())),
      orders_(index_.Units(layout().size()), 1, 1 + static_cast<int>(index_.blocks.size())) {
  AllocateBuffers();
  if (!dims_.gpt2()) {
    rope_cos_.resize(dims_.seq_len * dims_.head_dim / 2);
    rope_sin_.resize(rope_cos_.size());
    k::RopeTables(rope_cos_.data(), rope_sin_.data(), dims_.seq_len, dims_.head_dim, dims_.rope_theta);
  }
}

float* Transformer::P(int index) { return index < 0 ? nullptr : params().data() + layout().param(index).offset; }

float* Transformer::G(int index) { return index < 0 ? nullptr : grads().data() + layout().param(index).offset; }

void Transformer::InitParamRange(uint64_t seed, int first, int last) {
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(dims_.layers));
  for (int i = first; i < last; ++i) {
    std::span<float> p = layout().View(params(), i);
    switch (index_.init[i]) {
      case ParamInit::kZero: std::fill(p.begin(), p.end(), 0.0f); break;
      case ParamInit::kOne: std::fill(p.begin(), p.end(), 1.0f); break;
      case ParamInit::kNormal:
      case ParamInit::kResidual: {
        const double std = index_.init[i] == ParamInit::kNormal ? kInitStd : residual_std;
        Rng rng(HashCombine(seed, static_cast<uint64_t>(i)));
        for (float& x : p) x = static_cast<float>(std * rng.Normal());
        break;
      }
    }
  }
}

absl::StatusOr<int64_t> Transformer::CheckBatch(const Batch& batch, bool need_targets) const {
  return CheckTokenBatch(batch, need_targets, dims_.seq_len, dims_.vocab);
}

void Transformer::Resize(int64_t batch, int64_t seq_len, bool backward) {
  Buffers& b = buf_;
  const int64_t n = batch * seq_len, C = dims_.width, L = dims_.layers;
  b.batch = batch;
  b.seq_len = seq_len;
  b.n = n;
  b.encoded.resize(n * C);
  for (auto* v : {&b.norm1, &b.atty, &b.res_attn, &b.norm2, &b.res_mlp}) v->resize(L * n * C);
  for (auto* v : {&b.norm1_rstd, &b.norm2_rstd}) v->resize(L * n);
  if (dims_.gpt2()) {
    for (auto* v : {&b.norm1_mean, &b.norm2_mean}) v->resize(L * n);
    b.normf_mean.resize(n);
  }
  b.qkv.resize(L * n * dims_.qkv_width);
  b.att.resize(L * batch * dims_.heads * seq_len * seq_len);
  b.fc.resize(L * n * dims_.fc_width);
  b.fc_act.resize(L * n * dims_.mlp_width);
  b.normf.resize(n * C);
  b.normf_rstd.resize(n);
  b.logits.resize(n * dims_.vocab);
  b.proj.resize(n * C);
  if (!backward) return;
  for (auto* v : {&b.dres, &b.dnorm, &b.datty}) v->resize(n * C);
  b.dqkv.resize(n * dims_.qkv_width);
  b.dfc.resize(n * dims_.fc_width);
  b.dfc_act.resize(n * dims_.mlp_width);
  b.datt.resize(seq_len * seq_len);
}

absl::Status Transformer::Forward(const int32_t* tokens, GatedPass& pass) {
  Buffers& b = buf_;
  const int64_t n = b.n, C = dims_.width;
  if (absl::Status s = pass.Next(); !s.ok()) return s;
  k::EncoderForward(b.encoded.data(), tokens, P(index_.wte), P(index_.wpe), b.batch, b.seq_len, C);
  const float* x = b.encoded.data();
  for (int l = 0; l < dims_.layers; ++l) {
    if (absl::Status s = pass.Next(); !s.ok()) return s;
    BlockForward(l, x);
    x = b.res_mlp.data() + l * n * C;
  }
  if (absl::Status s = pass.Next(); !s.ok()) return s;
  NormForward(b.normf.data(), dims_.gpt2() ? b.normf_mean.data() : nullptr, b.normf_rstd.data(), x, index_.normf_w,
              index_.normf_b);
  k::MatmulForward<float>(b.logits.data(), b.normf.data(), P(index_.wte), nullptr, n, C, dims_.vocab);
  return absl::OkStatus();
}

void Transformer::ReportAll(const GradsReadyFn& on_ready) const {
  if (!on_ready) return;
  for (auto [first, last] : index_.ReadyRanges(layout().size())) on_ready(first, last);
}

absl::StatusOr<LossSum> Transformer::ForwardBackward(const Batch& batch, float loss_scale,
                                                     const GradsReadyFn& on_ready) {
  absl::StatusOr<int64_t> t = CheckBatch(batch, /*need_targets=*/true);
  if (!t.ok()) return t.status();
  GatedPass pass(param_gate(), orders_.train());
  if (batch.size == 0) {
    if (absl::Status s = pass.Drain(); !s.ok()) return s;
    ReportAll(on_ready);
    return LossSum{};
  }
  Resize(batch.size, *t, /*backward=*/true);
  if (absl::Status s = Forward(batch.tokens.data(), pass); !s.ok()) return s;
  Buffers& b = buf_;
  const int64_t n = b.n, C = dims_.width, L = dims_.layers;
  // The gradient replaces the logits in place.
  const k::XentSum xent =
      k::SoftmaxCrossEntropy(b.logits.data(), b.logits.data(), batch.targets.data(), n, dims_.vocab, loss_scale);
  std::fill(b.dnorm.begin(), b.dnorm.end(), 0.0f);
  k::MatmulBackward<float>(b.dnorm.data(), G(index_.wte), nullptr, b.logits.data(), b.normf.data(), P(index_.wte), n, C,
                           dims_.vocab);
  std::fill(b.dres.begin(), b.dres.end(), 0.0f);
  const float* last = L == 0 ? b.encoded.data() : b.res_mlp.data() + (L - 1) * n * C;
  NormBackward(b.dres.data(), index_.normf_w, index_.normf_b, b.dnorm.data(), last,
               dims_.gpt2() ? b.normf_mean.data() : nullptr, b.normf_rstd.data());
  if (on_ready) on_ready(index_.normf_w, layout().size());
  for (int l = static_cast<int>(L) - 1; l >= 0; --l) {
    if (absl::Status s = pass.Next(); !s.ok()) return s;
    BlockBackward(l, l == 0 ? b.encoded.data() : b.res_mlp.data() + (l - 1) * n * C);
    if (on_ready) on_ready(index_.blocks[l].first, index_.blocks[l].last);
  }
  pass.Finish();
  k::EncoderBackward(G(index_.wte), G(index_.wpe), b.dres.data(), batch.tokens.data(), b.batch, b.seq_len, C);
  if (on_ready) on_ready(0, index_.blocks_begin());
  return LossSum{xent.loss_sum, xent.count};
}

absl::StatusOr<LossSum> Transformer::Evaluate(const Batch& batch) {
  absl::StatusOr<int64_t> t = CheckBatch(batch, /*need_targets=*/true);
  if (!t.ok()) return t.status();
  GatedPass pass(param_gate(), orders_.forward());
  if (batch.size == 0) {
    if (absl::Status s = pass.Drain(); !s.ok()) return s;
    return LossSum{};
  }
  Resize(batch.size, *t, /*backward=*/false);
  if (absl::Status s = Forward(batch.tokens.data(), pass); !s.ok()) return s;
  const k::XentSum xent =
      k::SoftmaxCrossEntropy<float>(nullptr, buf_.logits.data(), batch.targets.data(), buf_.n, dims_.vocab, 1.0f);
  return LossSum{xent.loss_sum, xent.count};
}

absl::StatusOr<std::vector<float>> Transformer::Predict(const Batch& batch) {
  absl::StatusOr<int64_t> t = CheckBatch(batch, /*need_targets=*/false);
  if (!t.ok()) return t.status();
  GatedPass pass(param_gate(), orders_.forward());
  if (batch.size == 0) {
    if (absl::Status s = pass.Drain(); !s.ok()) return s;
    return std::vector<float>{};
  }
  Resize(batch.size, *t, /*backward=*/false);
  if (absl::Status s = Forward(batch.tokens.data(), pass); !s.ok()) return s;
  return std::vector<float>(buf_.logits.begin(), buf_.logits.begin() + buf_.n * dims_.vocab);
}

std::string Transformer::Describe() const { return DescribeTransformer(dims_); }

}  // namespace gradsync::nn
