// CreateCudaModel: checks that the spec names a transformer the CUDA kernels can run, builds the
// CPU model of the same spec for its layout and initial values, and hands both to the GPU model
// of the requested precision.
#include "gradsync/nn/cuda/cuda_model.h"

#include <cuda_bf16.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuda_transformer.h"
#include "gradsync/kernels/cuda/cuda_check.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/nn/presets.h"

namespace gradsync::nn::cuda {

absl::Status CudaModel::Synchronize() const {
  return kernels::cuda::CudaStatus(cudaStreamSynchronize(options_.stream),
                                   "cudaStreamSynchronize of the model's stream");
}

const char* AttentionKernelsName(AttentionKernels kernels) {
  switch (kernels) {
    case AttentionKernels::kProducts: return "products";
    case AttentionKernels::kFlash: return "flash";
    case AttentionKernels::kFused: return "fused";
  }
  return "?";
}

absl::StatusOr<AttentionKernels> ParseAttentionKernels(absl::string_view name) {
  for (AttentionKernels k : {AttentionKernels::kProducts, AttentionKernels::kFlash, AttentionKernels::kFused}) {
    if (name == AttentionKernelsName(k)) return k;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("attention kernels must be products, flash or fused, got \"", name, "\""));
}

absl::StatusOr<std::unique_ptr<CudaModel>> CreateCudaModel(const ModelPlan& plan, const CudaModelOptions& options) {
  const TransformerPlan* transformer = plan.transformer();
  if (transformer == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("model.preset: the CUDA model runs the transformer presets (",
                                                   absl::StrJoin(ModelPresetNames(), ", "),
                                                   " without mlp), got \"mlp\""));
  }
  const TransformerDims& dims = transformer->dims;
  if (dims.head_dim != 32 && dims.head_dim != 64 && dims.head_dim != 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.transformer.heads: the CUDA attention kernels need a head dim (width / heads) of "
                     "32, 64 or 128, got ",
                     dims.width, " / ", dims.heads, " = ", dims.head_dim));
  }
  // The CPU model of the same plan: the source of the layout and of the initial values.
  std::unique_ptr<Model> reference = CreateModel(plan, options.init);
  if (options.precision == Precision::kFp32) {
    auto model = CudaTransformer<float>::Create(plan, *reference, options);
    if (!model.ok()) return model.status();
    return std::unique_ptr<CudaModel>(*std::move(model));
  }
  auto model = CudaTransformer<__nv_bfloat16>::Create(plan, *reference, options);
  if (!model.ok()) return model.status();
  return std::unique_ptr<CudaModel>(*std::move(model));
}

}  // namespace gradsync::nn::cuda
