// One transformer block on the GPU, forward and backward, for both flavours: the operations of
// src/transformer_block.cc in the same order, through kernels/cuda's launchers.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <type_traits>

#include "cuda_transformer.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/gelu.cuh"
#include "gradsync/kernels/cuda/layernorm.cuh"
#include "gradsync/kernels/cuda/residual.cuh"
#include "gradsync/kernels/cuda/rmsnorm.cuh"
#include "gradsync/kernels/cuda/rope.cuh"
#include "gradsync/kernels/cuda/swiglu.cuh"

namespace gradsync::nn::cuda {

namespace k = gradsync::kernels::cuda;

template <typename T>
typename CudaTransformer<T>::LayerView CudaTransformer<T>::Layer(int l) {
  Activations& a = acts_;
  const int64_t n = n_, nc = n * dims_.width;
  auto at = [l](auto& buffer, int64_t per_layer) {
    return buffer.size() == 0 ? nullptr : buffer.data() + l * per_layer;
  };
  return {at(a.norm1, nc),
          at(a.qkv, n * dims_.qkv_width),
          at(a.atty, nc),
          at(a.res_attn, nc),
          at(a.norm2, nc),
          at(a.fc, n * dims_.fc_width),
          at(a.fc_act, n * dims_.mlp_width),
          at(a.res_mlp, nc),
          at(a.norm1_mean, n),
          at(a.norm1_rstd, n),
          at(a.lse, dims_.heads * n),
          at(a.norm2_mean, n),
          at(a.norm2_rstd, n)};
}

template <typename T>
absl::Status CudaTransformer<T>::NormForward(T* out, float* mean, float* rstd, const T* inp, int w, int b) {
  const float eps = dims_.norm_eps;
  if (dims_.gpt2()) {
    return k::LayerNormForward<T>(out, mean, rstd, inp, W(w), W(b), n_, dims_.width, eps, stream());
  }
  return k::RmsNormForward<T>(out, rstd, inp, W(w), n_, dims_.width, eps, stream());
}

template <typename T>
absl::Status CudaTransformer<T>::NormBackward(T* dinp, int w, int b, const T* dout, const T* inp, const float* mean,
                                              const float* rstd) {
  // The same amount of scratch every call for a given n (the column sums' order depends on it):
  // what the kernel asks for, capped by what Reserve allocated (less is allowed).
  float* scratch = acts_.norm_scratch.data();
  const int64_t have = static_cast<int64_t>(acts_.norm_scratch.size()), C = dims_.width;
  if (dims_.gpt2()) {
    return k::LayerNormBackward<T>(dinp, G(w), G(b), dout, inp, W(w), mean, rstd, n_, C, scratch,
                                   std::min(have, k::LayerNormBackwardScratchFloats(n_, C)), stream());
  }
  return k::RmsNormBackward<T>(dinp, G(w), dout, inp, W(w), rstd, n_, C, scratch,
                               std::min(have, k::RmsNormBackwardScratchFloats(n_, C)), stream());
}

// Layer l's attention through the kernels ChooseAttention picked (attention_gemm.cuh and
// flash_attention.cuh are bf16 only).
template <typename T>
absl::Status CudaTransformer<T>::AttentionForward(int l, const LayerView& v) {
  const kernels::AttentionShape shape = Shape();
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    switch (acts_.attention) {
      case AttentionKernels::kProducts:
        return k::AttentionGemmForward(*matmul_, v.atty,
                                       acts_.attn_probs.data() + l * k::AttentionGemmProbsCount(shape), v.qkv, shape,
                                       acts_.attn_scratch.data(), acts_.attn_scratch.size(), stream());
      case AttentionKernels::kFlash: return k::FlashAttentionForward(v.atty, v.lse, v.qkv, shape, stream());
      case AttentionKernels::kFused: break;
    }
  }
  return k::AttentionForward<T>(v.atty, v.lse, v.qkv, shape, stream());
}

template <typename T>
absl::Status CudaTransformer<T>::AttentionBackward(int l, const LayerView& v) {
  const kernels::AttentionShape shape = Shape();
  Activations& a = acts_;
  // The flash kernels write dqkv; the others add into it.
  if (!std::is_same_v<T, __nv_bfloat16> || a.attention != AttentionKernels::kFlash) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(Zero(a.dqkv, n_ * dims_.qkv_width));
  }
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    switch (a.attention) {
      case AttentionKernels::kProducts:
        return k::AttentionGemmBackward(*matmul_, a.dqkv.data(), a.datty.data(), v.qkv,
                                        a.attn_probs.data() + l * k::AttentionGemmProbsCount(shape), shape,
                                        a.attn_scratch.data(), a.attn_scratch.size(), stream());
      case AttentionKernels::kFlash:
        return k::FlashAttentionBackward(a.dqkv.data(), a.delta.data(), a.datty.data(), v.qkv, v.atty, v.lse, shape,
                                         stream(), k::GradMode::kOverwrite);
      case AttentionKernels::kFused: break;
    }
  }
  return k::AttentionBackward<T>(a.dqkv.data(), a.delta.data(), a.datty.data(), v.qkv, v.atty, v.lse, shape, stream());
}

template <typename T>
absl::Status CudaTransformer<T>::BlockForward(int l, const T* x) {
  const TransformerBlockParams& p = index_.blocks[l];
  const LayerView v = Layer(l);
  k::MatmulContext& mm = *matmul_;
  cudaStream_t s = stream();
  const int64_t n = n_, C = dims_.width, M = dims_.mlp_width;
  T* proj = acts_.proj.data();

  GRADSYNC_CUDA_RETURN_IF_ERROR(NormForward(v.norm1, v.norm1_mean, v.norm1_rstd, x, p.norm1_w, p.norm1_b));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      k::MatmulForward<T>(mm, v.qkv, v.norm1, W(p.qkv_w), W(p.qkv_b), n, C, dims_.qkv_width, s));
  if (!dims_.gpt2()) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::RopeForward<T>(v.qkv, rope_cos_.data(), rope_sin_.data(), batch_, seq_len_,
                                                    dims_.heads + dims_.kv_heads, dims_.head_dim, dims_.qkv_width, s));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(AttentionForward(l, v));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulForward<T>(mm, proj, v.atty, W(p.attn_out_w), W(p.attn_out_b), n, C, C, s));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::ResidualForward<T>(v.res_attn, x, proj, n * C, s));

  GRADSYNC_CUDA_RETURN_IF_ERROR(NormForward(v.norm2, v.norm2_mean, v.norm2_rstd, v.res_attn, p.norm2_w, p.norm2_b));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulForward<T>(mm, v.fc, v.norm2, W(p.fc_w), W(p.fc_b), n, C, dims_.fc_width, s));
  if (dims_.gpt2()) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::GeluForward<T>(v.fc_act, v.fc, n * M, s));
  } else {
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::SwiGluForward<T>(v.fc_act, v.fc, n, M, s));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulForward<T>(mm, proj, v.fc_act, W(p.mlp_out_w), W(p.mlp_out_b), n, M, C, s));
  return k::ResidualForward<T>(v.res_mlp, v.res_attn, proj, n * C, s);
}

template <typename T>
absl::Status CudaTransformer<T>::BlockBackward(int l, const T* x) {
  const TransformerBlockParams& p = index_.blocks[l];
  const LayerView v = Layer(l);
  Activations& a = acts_;
  k::MatmulContext& mm = *matmul_;
  cudaStream_t s = stream();
  const int64_t n = n_, C = dims_.width, M = dims_.mlp_width;
  T* dres = a.dres.data();

  // res_mlp = res_attn + mlp_out: dres is the gradient of both terms, and stays in place as the
  // gradient of res_attn while the MLP branch adds to it. The branch's own gradients (dfc_act,
  // dfc, dnorm, datty) each come from one operation, which writes them over the scratch.
  constexpr k::GradMode kWrite = k::GradMode::kOverwrite;
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulBackward<T>(mm, a.dfc_act.data(), G(p.mlp_out_w), G(p.mlp_out_b), dres,
                                                     v.fc_act, W(p.mlp_out_w), n, M, C, s, 0, kWrite));
  if (dims_.gpt2()) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::GeluBackward<T>(a.dfc.data(), v.fc, a.dfc_act.data(), n * M, s, kWrite));
  } else {
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::SwiGluBackward<T>(a.dfc.data(), v.fc, a.dfc_act.data(), n, M, s, kWrite));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulBackward<T>(mm, a.dnorm.data(), G(p.fc_w), G(p.fc_b), a.dfc.data(), v.norm2,
                                                     W(p.fc_w), n, C, dims_.fc_width, s, 0, kWrite));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      NormBackward(dres, p.norm2_w, p.norm2_b, a.dnorm.data(), v.res_attn, v.norm2_mean, v.norm2_rstd));

  // res_attn = x + attn_out, likewise.
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulBackward<T>(mm, a.datty.data(), G(p.attn_out_w), G(p.attn_out_b), dres, v.atty,
                                                     W(p.attn_out_w), n, C, C, s, 0, kWrite));
  GRADSYNC_CUDA_RETURN_IF_ERROR(AttentionBackward(l, v));
  if (!dims_.gpt2()) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(k::RopeBackward<T>(a.dqkv.data(), rope_cos_.data(), rope_sin_.data(), batch_,
                                                     seq_len_, dims_.heads + dims_.kv_heads, dims_.head_dim,
                                                     dims_.qkv_width, s));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulBackward<T>(mm, a.dnorm.data(), G(p.qkv_w), G(p.qkv_b), a.dqkv.data(), v.norm1,
                                                     W(p.qkv_w), n, C, dims_.qkv_width, s, 0, kWrite));
  return NormBackward(dres, p.norm1_w, p.norm1_b, a.dnorm.data(), x, v.norm1_mean, v.norm1_rstd);
}

// The class is instantiated in cuda_transformer.cc; these are its members defined here.
using bf16 = __nv_bfloat16;
template CudaTransformer<float>::LayerView CudaTransformer<float>::Layer(int);
template CudaTransformer<bf16>::LayerView CudaTransformer<bf16>::Layer(int);
template absl::Status CudaTransformer<float>::NormForward(float*, float*, float*, const float*, int, int);
template absl::Status CudaTransformer<bf16>::NormForward(bf16*, float*, float*, const bf16*, int, int);
template absl::Status CudaTransformer<float>::NormBackward(float*, int, int, const float*, const float*, const float*,
                                                           const float*);
template absl::Status CudaTransformer<bf16>::NormBackward(bf16*, int, int, const bf16*, const bf16*, const float*,
                                                          const float*);
template absl::Status CudaTransformer<float>::AttentionForward(int, const LayerView&);
template absl::Status CudaTransformer<bf16>::AttentionForward(int, const LayerView&);
template absl::Status CudaTransformer<float>::AttentionBackward(int, const LayerView&);
template absl::Status CudaTransformer<bf16>::AttentionBackward(int, const LayerView&);
template absl::Status CudaTransformer<float>::BlockForward(int, const float*);
template absl::Status CudaTransformer<bf16>::BlockForward(int, const bf16*);
template absl::Status CudaTransformer<float>::BlockBackward(int, const float*);
template absl::Status CudaTransformer<bf16>::BlockBackward(int, const bf16*);

}  // namespace gradsync::nn::cuda
