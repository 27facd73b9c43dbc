// Construction, parameter and activation buffers, and the model-level passes of the GPU
// transformer; one block's passes are in cuda_transformer_block.cc.
#include "cuda_transformer.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/kernels/cuda/encoder.cuh"
#include "gradsync/kernels/cuda/layernorm.cuh"
#include "gradsync/kernels/cuda/rmsnorm.cuh"
#include "gradsync/kernels/cuda/rope.cuh"
#include "gradsync/kernels/cuda/softmax_xent.cuh"
#include "gradsync/nn/presets.h"
#include "gradsync/nn/token_batch.h"
#include "precision_cast.cuh"

namespace gradsync::nn::cuda {
namespace {

namespace k = gradsync::kernels::cuda;
using k::CudaStatus;

template <typename B>
absl::Status Grow(B& buffer, int64_t count) {
  if (static_cast<int64_t>(buffer.size()) >= count) return absl::OkStatus();
  buffer = B();  // free first, so the old and new arrays never coexist
  auto grown = B::Allocate(static_cast<size_t>(count));
  if (!grown.ok()) return grown.status();
  buffer = *std::move(grown);
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::StatusOr<std::unique_ptr<CudaTransformer<T>>> CudaTransformer<T>::Create(const ModelPlan& plan,
                                                                               const Model& reference,
                                                                               const CudaModelOptions& options) {
  std::unique_ptr<CudaTransformer> model(new CudaTransformer(plan, options));
  GRADSYNC_CUDA_RETURN_IF_ERROR(model->Init(reference));
  return model;
}

template <typename T>
CudaTransformer<T>::CudaTransformer(const ModelPlan& plan, const CudaModelOptions& options)
    : CudaModel(options),
      plan_(plan),
      dims_(plan.transformer()->dims),
      index_(AddTransformerParams(dims_, &mutable_layout())),
      logits_stride_((dims_.vocab + 63) / 64 * 64),
      orders_(index_.Units(layout().size()), 1, 1 + static_cast<int>(index_.blocks.size())) {}

template <typename T>
CudaTransformer<T>::~CudaTransformer() {
  if (host_loss_ != nullptr) cudaFreeHost(host_loss_);
  if (UseDevice().ok() && Synchronize().ok()) (void)ReapReleases();
  for (const PendingRelease& r : releases_) cudaEventDestroy(r.done);
}

template <typename T>
absl::Status CudaTransformer<T>::UseDevice() const {
  return CudaStatus(cudaSetDevice(device()), absl::StrCat("cudaSetDevice(", device(), ")"));
}

template <typename T>
absl::Status CudaTransformer<T>::Init(const Model& reference) {
  // Both layouts come from AddTransformerParams; the parameters are copied by offset, so a
  // difference would be a bug here, not a user's error.
  if (layout().Hash() != reference.layout().Hash()) {
    return absl::InternalError("the GPU transformer's layout differs from the CPU model's");
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(UseDevice());
  absl::StatusOr<std::unique_ptr<k::MatmulContext>> matmul = k::MatmulContext::Create();
  if (!matmul.ok()) return matmul.status();
  matmul_ = *std::move(matmul);

  const int64_t total = layout().total_numel();
  // Mapped and zeroed whole; only a rank that keeps its shard of them gives chunks back.
  const bool init = options().init == ModelInit::kFromSeed;
  absl::StatusOr<std::unique_ptr<k::DevicePages>> params = k::DevicePages::Create(device(), total, stream(), init);
  if (!params.ok()) return params.status();
  params_ = *std::move(params);
  absl::StatusOr<std::unique_ptr<k::DevicePages>> grads = k::DevicePages::Create(device(), total, stream());
  if (!grads.ok()) return grads.status();
  grads_ = *std::move(grads);
  UseExternalBuffers({params_->data(), static_cast<size_t>(total)}, {grads_->data(), static_cast<size_t>(total)});
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(weights_bf16_, total));
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(grads_bf16_, total));
    GRADSYNC_CUDA_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(grads_bf16_.data(), 0, total * sizeof(__nv_bfloat16), stream()),
                   "cudaMemsetAsync of the bf16 gradient scratch"));
  }
  if (!dims_.gpt2()) {
    const int64_t table = dims_.seq_len * dims_.head_dim / 2;
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(rope_cos_, table));
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(rope_sin_, table));
    GRADSYNC_CUDA_RETURN_IF_ERROR(
        k::RopeTables(rope_cos_.data(), rope_sin_.data(), dims_.seq_len, dims_.head_dim, dims_.rope_theta, stream()));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(lm_head_, logits_stride_ * dims_.width));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMemsetAsync(lm_head_.data(), 0, lm_head_.size() * sizeof(T), stream()),
                                           "cudaMemsetAsync of the LM head"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(loss_, 1));
  void* pinned = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMallocHost(&pinned, sizeof(DeviceLoss)), "cudaMallocHost of the loss"));
  host_loss_ = static_cast<DeviceLoss*>(pinned);
  if (!init) return Synchronize();
  return CopyParamsFromHost(reference.params());
}

template <typename T>
absl::Status CudaTransformer<T>::CopyParamsFromHost(std::span<const float> host, int64_t offset) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(params_->data() + offset, host.data(), host.size() * sizeof(float),
                                 cudaMemcpyHostToDevice, stream()),
                 "cudaMemcpyAsync of the initial parameters"));
  return Synchronize();
}

template <typename T>
void CudaTransformer<T>::InitParamRange(uint64_t seed, int first, int last) {
  if (first >= last) return;
  // The CPU model uninitialised (its pages untouched) but for these parameters: a rank that
  // initialises one parameter at a time never builds the whole model.
  std::unique_ptr<Model> reference = CreateModel(plan_, ModelInit::kNone);
  absl::Status status = UseDevice();
  if (status.ok()) {
    reference->InitParamRange(seed, first, last);
    const auto [begin, end] = layout().Elements(first, last);
    status = CommitParams(begin, end);
    if (status.ok()) status = CopyParamsFromHost(reference->params().subspan(begin, end - begin), begin);
  }
  if (!status.ok() && pending_error_.ok()) pending_error_ = status;
}

template <typename T>
void CudaTransformer<T>::ZeroGrads() {
  absl::Status status = UseDevice();
  if (status.ok()) status = grads_->Zero(0, grads_->size());
  if (!status.ok() && pending_error_.ok()) pending_error_ = status;
}

template <typename T>
void CudaTransformer<T>::DiscardGrads(int64_t begin, int64_t end) {
  absl::Status status = UseDevice();
  if (status.ok()) status = grads_->Release(begin, end);
  if (!status.ok() && pending_error_.ok()) pending_error_ = status;
}

template <typename T>
int64_t CudaTransformer<T>::ResidentGradBytes() const {
  return grads_->mapped_bytes();
}

template <typename T>
void CudaTransformer<T>::DiscardParams(int64_t begin, int64_t end) {
  absl::Status status = UseDevice();
  cudaEvent_t done = nullptr;
  if (status.ok()) status = CudaStatus(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  if (status.ok()) status = CudaStatus(cudaEventRecord(done, stream()), "cudaEventRecord");
  if (status.ok()) {
    releases_.push_back({done, begin, end});
    status = ReapReleases();
  } else if (done != nullptr) {
    cudaEventDestroy(done);
  }
  if (!status.ok() && pending_error_.ok()) pending_error_ = status;
}

template <typename T>
absl::Status CudaTransformer<T>::CommitParams(int64_t begin, int64_t end) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(UseDevice());
  GRADSYNC_CUDA_RETURN_IF_ERROR(ReapReleases(begin, end));
  return params_->Commit(begin, end);
}

template <typename T>
int64_t CudaTransformer<T>::ResidentParamBytes() const {
  return params_->mapped_bytes();
}

template <typename T>
absl::Status CudaTransformer<T>::ReapReleases(int64_t wait_begin, int64_t wait_end) {
  for (auto it = releases_.begin(); it != releases_.end();) {
    if (it->begin < wait_end && wait_begin < it->end) {
      GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(it->done), "waiting to give parameters back"));
    } else if (const cudaError_t q = cudaEventQuery(it->done); q == cudaErrorNotReady) {
      ++it;
      continue;
    } else {
      GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(q, "cudaEventQuery before giving parameters back"));
    }
    GRADSYNC_CUDA_RETURN_IF_ERROR(params_->Release(it->begin, it->end));
    cudaEventDestroy(it->done);
    it = releases_.erase(it);
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CudaTransformer<T>::Enter(GatedPass& pass, const ParamUnit& unit) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(pass.Next());
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    // The unit's fp32 parameters were gathered just now: its bf16 weights from them.
    if (gated()) {
      for (const ParamRange& range : unit) {
        if (range.first >= range.last) continue;
        const auto [begin, end] = layout().Elements(range.first, range.last);
        GRADSYNC_CUDA_RETURN_IF_ERROR(
            CastToBf16(weights_bf16_.data() + begin, params_->data() + begin, end - begin, stream()));
      }
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status CudaTransformer<T>::CommitGrads(int first, int last) {
  if (first >= last) return absl::OkStatus();
  const auto [begin, end] = layout().Elements(first, last);
  return grads_->Commit(begin, end);
}

template <typename T>
absl::Status CudaTransformer<T>::TakePendingError() {
  absl::Status status = std::move(pending_error_);
  pending_error_ = absl::OkStatus();
  return status;
}

template <typename T>
const T* CudaTransformer<T>::W(int index) const {
  if (index < 0) return nullptr;
  const int64_t offset = layout().param(index).offset;
  if constexpr (std::is_same_v<T, float>) {
    return params_->data() + offset;
  } else {
    return weights_bf16_.data() + offset;
  }
}

template <typename T>
T* CudaTransformer<T>::G(int index) {
  if (index < 0) return nullptr;
  const int64_t offset = layout().param(index).offset;
  if constexpr (std::is_same_v<T, float>) {
    return grads_->data() + offset;
  } else {
    return grads_bf16_.data() + offset;
  }
}

template <typename T>
absl::Status CudaTransformer<T>::Flush(int first, int last) {
  if constexpr (std::is_same_v<T, float>) {
    return absl::OkStatus();
  } else {
    if (first >= last) return absl::OkStatus();
    const auto [begin, end] = layout().Elements(first, last);
    return FlushBf16Grads(grads_->data() + begin, grads_bf16_.data() + begin, end - begin, stream());
  }
}

template <typename T>
absl::Status CudaTransformer<T>::Report(int first, int last, const GradsReadyFn& on_ready) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(Flush(first, last));
  if (on_ready) on_ready(first, last);
  return absl::OkStatus();
}

template <typename T>
absl::Status CudaTransformer<T>::Reserve(int64_t n) {
  Activations& a = acts_;
  if (n <= a.capacity) return absl::OkStatus();
  const int64_t L = dims_.layers, C = dims_.width, H = dims_.heads;
  for (Dev* v : {&a.norm1, &a.atty, &a.res_attn, &a.norm2, &a.res_mlp}) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(*v, L * n * C));
  }
  for (Dev* v : {&a.encoded, &a.normf, &a.proj, &a.dres, &a.dnorm, &a.datty}) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(*v, n * C));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.qkv, L * n * dims_.qkv_width));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.fc, L * n * dims_.fc_width));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.fc_act, L * n * dims_.mlp_width));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.logits, n * logits_stride_));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.dqkv, n * dims_.qkv_width));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.dfc, n * dims_.fc_width));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.dfc_act, n * dims_.mlp_width));
  for (DevF* v : {&a.norm1_rstd, &a.norm2_rstd}) GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(*v, L * n));
  if (dims_.gpt2()) {
    for (DevF* v : {&a.norm1_mean, &a.norm2_mean}) GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(*v, L * n));
    GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.normf_mean, n));
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.normf_rstd, n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.lse, L * H * n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.delta, H * n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.row_loss, n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.norm_scratch, std::max<int64_t>({1, k::LayerNormBackwardScratchFloats(n, C),
                                                                        k::RmsNormBackwardScratchFloats(n, C)})));
  absl::StatusOr<size_t> encoder_bytes = k::EncoderBackwardScratchBytes(n, dims_.vocab);
  if (!encoder_bytes.ok()) return encoder_bytes.status();
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.encoder_scratch, static_cast<int64_t>(*encoder_bytes)));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.tokens, n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.targets, n));
  GRADSYNC_CUDA_RETURN_IF_ERROR(ChooseAttention(n));
  a.capacity = n;
  return absl::OkStatus();
}

template <typename T>
absl::Status CudaTransformer<T>::ChooseAttention(int64_t n) {
  Activations& a = acts_;
  const auto release_products = [&a] {
    a.attn_probs = Dev();
    a.attn_scratch = kernels::cuda::DeviceBuffer<unsigned char>();
  };
  a.attention = AttentionKernels::kFused;
  if (!std::is_same_v<T, __nv_bfloat16> || options().attention == AttentionKernels::kFused) {
    release_products();
    return absl::OkStatus();
  }
  if (options().attention == AttentionKernels::kFlash && k::FlashAttentionSupports({.head_dim = dims_.head_dim}) &&
      k::FlashAttentionDeviceSupported()) {
    release_products();
    a.attention = AttentionKernels::kFlash;
    return absl::OkStatus();
  }
  // Bounds for any B x T = n with T <= the context length: the probabilities B H T T of each
  // layer are at most n H maxT, and the scratch is largest for the longest rows.
  const kernels::AttentionShape widest = dims_.Attention(n / dims_.seq_len + 1, dims_.seq_len);
  const int64_t probs = dims_.layers * n * dims_.heads * dims_.seq_len;
  const size_t scratch = k::AttentionGemmScratchBytes(widest);
  size_t free_bytes = 0, total_bytes = 0;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  const size_t have = free_bytes + a.attn_probs.size() * sizeof(T) + a.attn_scratch.size();
  if (static_cast<size_t>(probs) * sizeof(T) + scratch > have / 2) {
    // Too large: the fused kernels, and the memory back.
    release_products();
    return absl::OkStatus();
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.attn_probs, probs));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Grow(a.attn_scratch, static_cast<int64_t>(scratch)));
  a.attention = AttentionKernels::kProducts;
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<int64_t> CudaTransformer<T>::Prepare(const Batch& batch, bool need_targets) {
  GRADSYNC_CUDA_RETURN_IF_ERROR(TakePendingError());
  absl::StatusOr<int64_t> t = CheckTokenBatch(batch, need_targets, dims_.seq_len, dims_.vocab);
  if (!t.ok() || *t == 0) return t;
  GRADSYNC_CUDA_RETURN_IF_ERROR(UseDevice());
  batch_ = batch.size;
  seq_len_ = *t;
  n_ = batch_ * seq_len_;
  GRADSYNC_CUDA_RETURN_IF_ERROR(Reserve(n_));
  // Pageable sources: the copies stage them before returning, so the batch may go at once.
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(acts_.tokens.data(), batch.tokens.data(), n_ * sizeof(int32_t), cudaMemcpyHostToDevice, stream()),
      "cudaMemcpyAsync of the tokens"));
  if (need_targets) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(acts_.targets.data(), batch.targets.data(),
                                                             n_ * sizeof(int32_t), cudaMemcpyHostToDevice, stream()),
                                             "cudaMemcpyAsync of the targets"));
  }
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    // params() is the truth; whoever wrote it last (optimizer, checkpoint, broadcast), the pass
    // runs on its rounding. One pass over the weights: well under 1% of a step's time. Gated,
    // most of params() is not there: each unit is cast as it is acquired (Enter).
    if (!gated()) {
      GRADSYNC_CUDA_RETURN_IF_ERROR(
          CastToBf16(weights_bf16_.data(), params_->data(), layout().total_numel(), stream()));
    }
  }
  return t;
}

template <typename T>
absl::Status CudaTransformer<T>::Zero(Dev& buffer, int64_t count) {
  return CudaStatus(cudaMemsetAsync(buffer.data(), 0, count * sizeof(T), stream()),
                    "cudaMemsetAsync of a gradient scratch");
}

template <typename T>
absl::Status CudaTransformer<T>::Forward(GatedPass& pass) {
  Activations& a = acts_;
  const TransformerParams& p = index_;
  const int64_t n = n_, C = dims_.width, V = dims_.vocab;
  GRADSYNC_CUDA_RETURN_IF_ERROR(Enter(pass, orders_.unit(0)));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      k::EncoderForward(a.encoded.data(), a.tokens.data(), W(p.wte), W(p.wpe), batch_, seq_len_, C, V, stream()));
  const T* x = a.encoded.data();
  for (int l = 0; l < dims_.layers; ++l) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(Enter(pass, orders_.unit(1 + l)));
    GRADSYNC_CUDA_RETURN_IF_ERROR(BlockForward(l, x));
    x = a.res_mlp.data() + l * n * C;
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Enter(pass, orders_.unit(static_cast<int>(dims_.layers) + 1)));
  GRADSYNC_CUDA_RETURN_IF_ERROR(NormForward(a.normf.data(), dims_.gpt2() ? a.normf_mean.data() : nullptr,
                                            a.normf_rstd.data(), x, p.normf_w, p.normf_b));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(lm_head_.data(), W(p.wte), V * C * sizeof(T), cudaMemcpyDeviceToDevice, stream()),
                 "cudaMemcpyAsync of wte into the LM head"));
  return k::MatmulForward<T>(*matmul_, a.logits.data(), a.normf.data(), lm_head_.data(), nullptr, n, C, logits_stride_,
                             stream());
}

template <typename T>
absl::StatusOr<LossSum> CudaTransformer<T>::ReadLoss() {
  char* base = reinterpret_cast<char*>(loss_.data());
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::XentLossSum(reinterpret_cast<double*>(base + offsetof(DeviceLoss, sum)),
                                               reinterpret_cast<int64_t*>(base + offsetof(DeviceLoss, count)),
                                               acts_.row_loss.data(), acts_.targets.data(), n_, k::kXentIgnoreIndex,
                                               stream()));
  GRADSYNC_CUDA_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(host_loss_, loss_.data(), sizeof(DeviceLoss), cudaMemcpyDeviceToHost, stream()),
                 "cudaMemcpyAsync of the loss"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Synchronize());
  return LossSum{host_loss_->sum, host_loss_->count};
}

template <typename T>
absl::StatusOr<LossSum> CudaTransformer<T>::ForwardBackward(const Batch& batch, float loss_scale,
                                                            const GradsReadyFn& on_ready) {
  absl::StatusOr<int64_t> t = Prepare(batch, /*need_targets=*/true);
  if (!t.ok()) return t.status();
  GatedPass pass(param_gate(), orders_.train());
  if (*t == 0) {
    // Every rank takes part in every gather, with or without a batch.
    GRADSYNC_CUDA_RETURN_IF_ERROR(pass.Drain());
    // No gradient, but the ranges still go to the reducer, which reads them: mapped, zero.
    for (auto [first, last] : index_.ReadyRanges(layout().size())) {
      GRADSYNC_CUDA_RETURN_IF_ERROR(CommitGrads(first, last));
      if (on_ready) on_ready(first, last);
    }
    return LossSum{};
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Forward(pass));
  Activations& a = acts_;
  const TransformerParams& p = index_;
  const int64_t n = n_, C = dims_.width, V = dims_.vocab, L = dims_.layers;
  // The gradient of loss_scale x (loss sum) replaces the logits in place.
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::SoftmaxCrossEntropy<T>(a.logits.data(), a.row_loss.data(), a.logits.data(),
                                                          a.targets.data(), n, V, loss_scale, k::kXentIgnoreIndex,
                                                          stream(), logits_stride_));
  // The gradients backward writes are mapped first, section by section (DevicePages).
  GRADSYNC_CUDA_RETURN_IF_ERROR(CommitGrads(p.wte, p.wte + 1));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CommitGrads(p.normf_w, layout().size()));
  // dnorm over the padded vocabulary (the padding's gradient is 0), dwte over its V real rows.
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulBackward<T>(*matmul_, a.dnorm.data(), nullptr, nullptr, a.logits.data(),
                                                     a.normf.data(), lm_head_.data(), n, C, logits_stride_, stream(), 0,
                                                     k::GradMode::kOverwrite));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::MatmulBackward<T>(*matmul_, nullptr, G(p.wte), nullptr, a.logits.data(),
                                                     a.normf.data(), W(p.wte), n, C, V, stream(), logits_stride_));
  // The tied embedding's output half, moved to fp32 now so that its bf16 value rounds once.
  GRADSYNC_CUDA_RETURN_IF_ERROR(Flush(p.wte, p.wte + 1));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Zero(a.dres, n * C));
  const T* last = L == 0 ? a.encoded.data() : a.res_mlp.data() + (L - 1) * n * C;
  GRADSYNC_CUDA_RETURN_IF_ERROR(NormBackward(a.dres.data(), p.normf_w, p.normf_b, a.dnorm.data(), last,
                                             dims_.gpt2() ? a.normf_mean.data() : nullptr, a.normf_rstd.data()));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Report(p.normf_w, layout().size(), on_ready));
  for (int l = static_cast<int>(L) - 1; l >= 0; --l) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(CommitGrads(p.blocks[l].first, p.blocks[l].last));
    GRADSYNC_CUDA_RETURN_IF_ERROR(Enter(pass, orders_.unit(1 + l)));
    GRADSYNC_CUDA_RETURN_IF_ERROR(BlockBackward(l, l == 0 ? a.encoded.data() : a.res_mlp.data() + (l - 1) * n * C));
    GRADSYNC_CUDA_RETURN_IF_ERROR(Report(p.blocks[l].first, p.blocks[l].last, on_ready));
  }
  pass.Finish();  // the embeddings' backward reads no parameter
  GRADSYNC_CUDA_RETURN_IF_ERROR(CommitGrads(0, p.blocks_begin()));
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::EncoderBackward<T>(G(p.wte), G(p.wpe), a.dres.data(), a.tokens.data(), batch_,
                                                      seq_len_, C, V, a.encoder_scratch.data(),
                                                      a.encoder_scratch.size(), stream()));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Report(0, p.blocks_begin(), on_ready));
  absl::StatusOr<LossSum> loss = ReadLoss();
  if (loss.ok()) GRADSYNC_CUDA_RETURN_IF_ERROR(ReapReleases());  // the stream is idle: all of them
  return loss;
}

template <typename T>
absl::StatusOr<LossSum> CudaTransformer<T>::Evaluate(const Batch& batch) {
  absl::StatusOr<int64_t> t = Prepare(batch, /*need_targets=*/true);
  if (!t.ok()) return t.status();
  GatedPass pass(param_gate(), orders_.forward());
  if (*t == 0) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(pass.Drain());
    return LossSum{};
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Forward(pass));
  pass.Finish();
  GRADSYNC_CUDA_RETURN_IF_ERROR(k::SoftmaxCrossEntropy<T>(nullptr, acts_.row_loss.data(), acts_.logits.data(),
                                                          acts_.targets.data(), n_, dims_.vocab, 1.0f,
                                                          k::kXentIgnoreIndex, stream(), logits_stride_));
  absl::StatusOr<LossSum> loss = ReadLoss();
  if (loss.ok()) GRADSYNC_CUDA_RETURN_IF_ERROR(ReapReleases());
  return loss;
}

template <typename T>
absl::StatusOr<std::vector<float>> CudaTransformer<T>::Predict(const Batch& batch) {
  absl::StatusOr<int64_t> t = Prepare(batch, /*need_targets=*/false);
  if (!t.ok()) return t.status();
  GatedPass pass(param_gate(), orders_.forward());
  if (*t == 0) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(pass.Drain());
    return std::vector<float>{};
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(Forward(pass));
  pass.Finish();
  std::vector<T> logits(n_ * dims_.vocab);
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(
      cudaMemcpy2DAsync(logits.data(), dims_.vocab * sizeof(T), acts_.logits.data(), logits_stride_ * sizeof(T),
                        dims_.vocab * sizeof(T), n_, cudaMemcpyDeviceToHost, stream()),
      "cudaMemcpy2DAsync of the logits"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Synchronize());
  GRADSYNC_CUDA_RETURN_IF_ERROR(ReapReleases());
  if constexpr (std::is_same_v<T, float>) {
    return logits;
  } else {
    std::vector<float> out(logits.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = __bfloat162float(logits[i]);
    return out;
  }
}

template <typename T>
std::string CudaTransformer<T>::Describe() const {
  return absl::StrCat(DescribeTransformer(dims_), ", cuda ", std::is_same_v<T, float> ? "fp32" : "bf16");
}

template <typename T>
kernels::AttentionShape CudaTransformer<T>::Shape() const {
  return dims_.Attention(batch_, seq_len_);
}

template class CudaTransformer<float>;
template class CudaTransformer<__nv_bfloat16>;

}  // namespace gradsync::nn::cuda
