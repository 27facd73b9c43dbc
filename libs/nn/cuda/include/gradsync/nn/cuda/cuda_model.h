// The transformer of libs/nn on one GPU: the same function, parameters and layout as the CPU
// Transformer (src/transformer.h), with every layer run by the kernels of kernels/cuda.
//
// Memory. params() and grads() are ONE contiguous fp32 device buffer each, laid out by the very
// ParamLayout the CPU model builds (same names, shapes, offsets, order), so checkpoints, layout
// hashes and the bucketed reducer, which works on ranges of grads(), apply unchanged; on_device()
// is true and the spans must never be dereferenced on the host. grads() is contiguous in
// addresses but backed by chunks of device memory (kernels::cuda::DevicePages): DiscardGrads gives
// the whole chunks of a range back to the device, and backward maps every layer's chunks again,
// zeroed, before it writes them (a range given back reads as zero). Activations live in a device
// arena sized for the largest batch seen (grown, never shrunk).
//
// Precision.
//   kFp32: activations, weights and gradients in fp32; matmuls in plain fp32 (no TF32), so the
//          model matches the CPU model to fp32 rounding of reordered sums.
//   kBf16: mixed precision. params() stays the fp32 master copy and grads() fp32; the forward
//          and backward passes run on a bf16 copy of the weights (refreshed from params() at
//          the start of every pass, so writes into params() by a checkpoint load or a broadcast
//          take effect without any call) with bf16 activations and fp32 statistics. A layer's
//          parameter gradients are produced in bf16 (each rounded once) and added into the fp32
//          grads() before that layer is reported ready.
//
// Streams and callbacks. All work is queued on the stream given at creation. ForwardBackward,
// Evaluate and Predict return once their work has finished (they read the loss sum back), so
// errors of kernel execution surface as their status. The GradsReadyFn is called on the calling
// host thread as soon as a layer's gradient kernels have been QUEUED, not when they have run: a
// consumer must order its device work after the compute stream (record an event on stream(),
// make its own stream wait on it), as the NCCL communicator does with its compute_stream. Each
// public method makes the model's device current on the calling thread. One thread at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/model_plan.h"

namespace gradsync::nn::cuda {

enum class Precision { kFp32, kBf16 };

// The attention kernels of a bf16 model:
//   kProducts  batched tensor-core products (kernels/cuda/attention_gemm.cuh), which keep every
//              layer's [B, H, T, T] probabilities, when those and the products' scratch take at
//              most half the GPU memory free when activations are sized; kFused otherwise;
//   kFlash     the tensor-core FlashAttention kernels (flash_attention.cuh), which keep only the
//              softmax statistics, where they apply (head_dim 32 or 64, compute capability 8.0
//              or later); kProducts otherwise;
//   kFused     the exact fp32 FlashAttention-style kernels on CUDA cores (attention.cuh).
enum class AttentionKernels { kProducts, kFlash, kFused };

// "products", "flash", "fused"; and back (INVALID_ARGUMENT naming the choices).
const char* AttentionKernelsName(AttentionKernels kernels);
absl::StatusOr<AttentionKernels> ParseAttentionKernels(absl::string_view name);

struct CudaModelOptions {
  // CUDA device ordinal.
  int device = 0;
  // The stream all work is queued on; not owned, must outlive the model. Null is the legacy
  // default stream.
  cudaStream_t stream = nullptr;
  Precision precision = Precision::kFp32;
  // How bf16 attention runs; fp32 always takes the exact fused kernels.
  AttentionKernels attention = AttentionKernels::kProducts;
  // kNone: the parameters are left for the caller to fill (InitParamRange, one shard at a time),
  // and none of their device memory is mapped until then (CommitParams): a rank of a fully
  // sharded job never holds the whole model.
  ModelInit init = ModelInit::kFromSeed;
};

class CudaModel : public Model {
 public:
  bool on_device() const override { return true; }
  int device() const { return options_.device; }
  cudaStream_t stream() const { return options_.stream; }
  Precision precision() const { return options_.precision; }
  const CudaModelOptions& options() const { return options_; }

  // Waits for the work queued on stream(); the first error of any queued kernel or copy, as
  // INTERNAL naming the call.
  absl::Status Synchronize() const;

 protected:
  explicit CudaModel(const CudaModelOptions& options) : options_(options) {}

 private:
  CudaModelOptions options_;
};

// Builds the GPU model of a plan (a transformer) and initialises it from the plan's seed exactly as
// CreateModel would (same values, bit for bit). INVALID_ARGUMENT naming the field when the plan is an
// mlp ("model.preset: ...") or the CUDA kernels cannot run it ("model.transformer.heads: ..." when
// width / heads is not 32, 64 or 128, the head dims of the attention kernels); INTERNAL or
// RESOURCE_EXHAUSTED when the device, its memory or cuBLASLt cannot be had.
absl::StatusOr<std::unique_ptr<CudaModel>> CreateCudaModel(const ModelPlan& plan, const CudaModelOptions& options);

}  // namespace gradsync::nn::cuda
