// The GPU transformer behind CreateCudaModel (gradsync/nn/cuda/cuda_model.h), templated on the
// working type T of weights and activations: float (Precision::kFp32) or __nv_bfloat16
// (Precision::kBf16, with fp32 master params and grads). Layer for layer it is the CPU
// Transformer of src/transformer.h (same parameters, same order of operations), with the CPU
// kernels swapped for kernels/cuda's launchers:
//
//   forward:  x0 = wte[tokens] (+ wpe)
//             per block l: a = attn(rope(qkv(norm1(x)))), r = x + proj(a),
//                          x' = r + mlp_out(act(fc(norm2(r))))
//             logits = normf(x_L) . wte^T
//   loss:     softmax cross-entropy per position, targets -1 ignored; the gradient is that of
//             loss_scale x (sum of the counted positions' losses), as on the CPU
//   backward: the same ops in reverse, each gradient ACCUMULATED into its parameter's range;
//             a layer's range is handed to on_ready once its last gradient kernel is queued
//
// The dimensions are a TransformerDims (gradsync/nn/model_config.h) and the parameters are bound
// by the layout indices AddTransformerParams (gradsync/nn/transformer_params.h) returns, the
// derivations the CPU model uses, so both build one layout.
//
// cuda_transformer.cc holds construction, buffers and the model-level passes;
// cuda_transformer_block.cc one block's forward and backward.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/kernels/cuda/attention.cuh"
#include "gradsync/kernels/cuda/attention_gemm.cuh"
#include "gradsync/kernels/cuda/device_buffer.h"
#include "gradsync/kernels/cuda/device_pages.h"
#include "gradsync/kernels/cuda/flash_attention.cuh"
#include "gradsync/kernels/cuda/matmul.cuh"
#include "gradsync/nn/cuda/cuda_model.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/nn/model_plan.h"
#include "gradsync/nn/param_gate.h"
#include "gradsync/nn/transformer_params.h"

namespace gradsync::nn::cuda {

template <typename T>
class CudaTransformer final : public CudaModel {
 public:
  // `plan` is a transformer's, with a head dim the attention kernels support; `reference` is the
  // CPU model of the same plan, already initialised: its values become the initial parameters
  // (INTERNAL if its layout is not this model's).
  static absl::StatusOr<std::unique_ptr<CudaTransformer>> Create(const ModelPlan& plan, const Model& reference,
                                                                 const CudaModelOptions& options);

  ~CudaTransformer() override;

  // Builds the CPU model's initial values for `seed` on the host and copies parameters
  // [first, last) of them to params(). The interface returns nothing: a failure is kept and
  // returned by the next call that returns a status.
  void InitParamRange(uint64_t seed, int first, int last) override;
  void ZeroGrads() override;
  // ddp.sharding "full": the passes bracket the embeddings, each block and the head with the
  // gate, as the CPU Transformer does; in bf16 each unit's weights are cast when it is acquired.
  bool supports_param_gate() const override { return true; }
  // Gives the whole chunks of params() inside [begin, end) back to the device once the work
  // queued so far (the unit's kernels that read them) is done; CommitParams maps a range back,
  // first finishing any such release that overlaps it.
  void DiscardParams(int64_t begin, int64_t end) override;
  absl::Status CommitParams(int64_t begin, int64_t end) override;
  int64_t ResidentParamBytes() const override;
  // Gives the whole chunks of grads() inside [begin, end) back to the device (DevicePages), the
  // rest of the range zeroed; backward maps them again, zeroed, before it writes there.
  void DiscardGrads(int64_t begin, int64_t end) override;
  int64_t ResidentGradBytes() const override;
  absl::StatusOr<LossSum> ForwardBackward(const Batch& batch, float loss_scale, const GradsReadyFn& on_ready) override;
  absl::StatusOr<LossSum> Evaluate(const Batch& batch) override;
  // Logits [size, T, V] (converted to float in bf16 mode).
  absl::StatusOr<std::vector<float>> Predict(const Batch& batch) override;
  std::string Describe() const override;

 private:
  using Dev = kernels::cuda::DeviceBuffer<T>;
  using DevF = kernels::cuda::DeviceBuffer<float>;

  // Device activations for up to `capacity` tokens (B x T). Per-layer tensors stack L layers,
  // each layer's slice sized for the CURRENT n tokens. T unless named fp32.
  struct Activations {
    int64_t capacity = 0;
    Dev encoded, norm1, qkv, atty, res_attn, norm2, fc, fc_act, res_mlp, normf, logits, proj;
    DevF norm1_mean, norm1_rstd, lse, norm2_mean, norm2_rstd, normf_mean, normf_rstd;  // fp32
    Dev dres, dnorm, datty, dqkv, dfc, dfc_act;                                        // backward scratch, one layer
    DevF delta, norm_scratch, row_loss;
    kernels::cuda::DeviceBuffer<unsigned char> encoder_scratch;
    // The attention kernels ChooseAttention picked; for kProducts, every layer's probabilities
    // and the products' scratch.
    AttentionKernels attention = AttentionKernels::kFused;
    Dev attn_probs;
    kernels::cuda::DeviceBuffer<unsigned char> attn_scratch;
    kernels::cuda::DeviceBuffer<int32_t> tokens, targets;
  };

  // Block l's slices of the per-layer activations.
  struct LayerView {
    T *norm1, *qkv, *atty, *res_attn, *norm2, *fc, *fc_act, *res_mlp;
    float *norm1_mean, *norm1_rstd, *lse, *norm2_mean, *norm2_rstd;
  };

  // The sums XentLossSum writes, read back to pinned host memory.
  struct DeviceLoss {
    double sum;
    int64_t count;
  };

  CudaTransformer(const ModelPlan& plan, const CudaModelOptions& options);
  absl::Status Init(const Model& reference);
  // Copies `host` to params() from element `offset` on.
  absl::Status CopyParamsFromHost(std::span<const float> host, int64_t offset = 0);

  // Weights (the bf16 copy in bf16 mode) and gradient targets (the bf16 scratch in bf16 mode)
  // of parameter `index`; null for -1.
  const T* W(int index) const;
  T* G(int index);
  // bf16 mode: adds the bf16 gradients of parameters [first, last) into grads() and clears them.
  absl::Status Flush(int first, int last);
  absl::Status Report(int first, int last, const GradsReadyFn& on_ready);
  // Maps (zeroed) whatever chunks of the gradients of parameters [first, last) were given back,
  // before backward writes them.
  absl::Status CommitGrads(int first, int last);

  // Checks the batch, sizes the activations, uploads tokens (and targets), and refreshes the bf16
  // weights. Returns T (0 for an empty batch).
  absl::StatusOr<int64_t> Prepare(const Batch& batch, bool need_targets);
  absl::Status Reserve(int64_t n);
  LayerView Layer(int l);
  kernels::AttentionShape Shape() const;
  // Reserve's part for attention: picks the kernels (options().attention, the shape, the device,
  // the free memory) and sizes their buffers for n tokens.
  absl::Status ChooseAttention(int64_t n);
  absl::Status Forward(GatedPass& pass);
  // Acquires the pass's next unit, which is `unit`; gated in bf16, casts its weights.
  absl::Status Enter(GatedPass& pass, const ParamUnit& unit);
  // Carries out the deferred parameter releases whose work is done, waiting for those that
  // overlap [wait_begin, wait_end).
  absl::Status ReapReleases(int64_t wait_begin = 0, int64_t wait_end = 0);
  bool gated() const { return param_gate() != nullptr; }
  absl::Status AttentionForward(int l, const LayerView& v);
  absl::Status AttentionBackward(int l, const LayerView& v);
  absl::Status BlockForward(int l, const T* x);
  // Takes the gradient of block l's output in acts_.dres and leaves that of its input there.
  absl::Status BlockBackward(int l, const T* x);
  absl::Status NormForward(T* out, float* mean, float* rstd, const T* inp, int w, int b);
  absl::Status NormBackward(T* dinp, int w, int b, const T* dout, const T* inp, const float* mean, const float* rstd);
  absl::Status Zero(Dev& buffer, int64_t count);
  // Queues the loss sum's copy to host and waits for the stream.
  absl::StatusOr<LossSum> ReadLoss();
  absl::Status UseDevice() const;
  absl::Status TakePendingError();

  ModelPlan plan_;
  TransformerDims dims_;
  TransformerParams index_;  // layout indices of every parameter
  // The LM head runs over a padded vocabulary Vp (V rounded up to 64): the logits' rows lie Vp
  // apart, and lm_head_ holds wte [V, C] followed by Vp - V zero rows, copied from wte before each
  // forward. With every dimension of the products a multiple of 64, cuBLASLt runs its tensor-core
  // kernels; an odd V (GPT-2's 50257) gets only unaligned ones, several times slower. The padded
  // logits come out exactly 0 and their gradient stays 0, so they add nothing to dnorm; the
  // gradient of wte covers its V real rows only.
  int64_t logits_stride_;
  Dev lm_head_;
  // Current batch: B sequences of T tokens, n = B T.
  int64_t batch_ = 0, seq_len_ = 0, n_ = 0;

  std::unique_ptr<kernels::cuda::MatmulContext> matmul_;
  // fp32 parameters and gradients in chunks the device can take back (ddp.sharding "full" and
  // "gradients").
  std::unique_ptr<kernels::cuda::DevicePages> params_, grads_;
  // Parameter ranges given back once the work queued before `done` is over.
  struct PendingRelease {
    cudaEvent_t done = nullptr;
    int64_t begin = 0, end = 0;
  };
  std::deque<PendingRelease> releases_;
  // The gate's units (embeddings, blocks, head) and the orders a training and a forward-only
  // pass use them in, as the CPU Transformer's (TransformerParams::Units).
  PassOrders orders_;
  // bf16 mode only: the working copy of the weights and the gradient scratch, laid out as params.
  kernels::cuda::DeviceBuffer<__nv_bfloat16> weights_bf16_, grads_bf16_;
  DevF rope_cos_, rope_sin_;  // llama: [seqLen, D / 2]
  kernels::cuda::DeviceBuffer<DeviceLoss> loss_;
  DeviceLoss* host_loss_ = nullptr;  // pinned
  Activations acts_;
  absl::Status pending_error_;
};

extern template class CudaTransformer<float>;
extern template class CudaTransformer<__nv_bfloat16>;

}  // namespace gradsync::nn::cuda
