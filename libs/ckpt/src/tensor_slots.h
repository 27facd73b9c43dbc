// Private to libs/ckpt: where each tensor of an interchange layout (interchange.h) lives in
// gradsync's parameter buffer. A slot is a range of rows of one parameter, stored as is or
// transposed; the parameter's first dimension is its rows, the rest its columns (a vector is one
// column). Export copies slots out of the buffer, import copies them in, so both directions share
// one table per layout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/ckpt/safetensors.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::ckpt {

struct TensorSlot {
  std::string name;  // in the file
  int param = 0;     // layout index
  int64_t row_begin = 0, row_end = 0;
  bool transpose = false;  // the file holds [columns, rows] (Hugging Face's Conv1D)
};

enum class SlotNames { kGradsync, kHf };

// The dimensions of a transformer spec. INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<nn::TransformerDims> DimsOf(const v1::ModelSpec& model);

// The slots of `layout` in `names`, in file order. kGradsync: every parameter whole under its own
// name (any model). kHf: a transformer's Hugging Face names; `hf_prefix` false leaves out GPT-2's
// "transformer." (files saved from GPT2Model rather than GPT2LMHeadModel). INVALID_ARGUMENT naming
// the model field when the layout has no Hugging Face form.
absl::StatusOr<std::vector<TensorSlot>> Slots(const v1::ModelSpec& model, const nn::ParamLayout& layout,
                                              SlotNames names, bool hf_prefix = true);

// The slot's shape in the file.
std::vector<int64_t> SlotShape(const TensorSlot& slot, const nn::ParamLayout& layout);

// The slot's tensor, copied out of `params`.
NamedTensor Extract(const TensorSlot& slot, const nn::ParamLayout& layout, std::span<const float> params);

// Copies `values` (the slot's shape) into `params`.
void Insert(const TensorSlot& slot, const nn::ParamLayout& layout, std::span<const float> values,
            std::span<float> params);

// "[768, 2304]".
std::string ShapeText(const std::vector<int64_t>& shape);

}  // namespace gradsync::ckpt
