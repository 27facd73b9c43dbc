#include "gradsync/nn/model.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "mlp.h"

namespace gradsync::nn {

void Model::ZeroGrads() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

void Model::AllocateBuffers() {
  params_.assign(layout_.total_numel(), 0.0f);
  grads_.assign(layout_.total_numel(), 0.0f);
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const gradsync::v1::JobSpec& spec) {
  const std::string& preset = spec.model().preset();
  if (preset == "mlp") {
    absl::StatusOr<std::unique_ptr<Mlp>> mlp = Mlp::Create(spec);
    if (!mlp.ok()) return mlp.status();
    (*mlp)->InitParams(spec.training().seed());
    return std::unique_ptr<Model>(std::move(*mlp));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("model.preset: unknown preset \"", preset, "\"; known: mlp"));
}

}  // namespace gradsync::nn
