// Private to libs/ckpt: llm.c's GPT-2 checkpoint (train_gpt2.c's gpt2_build_from_checkpoint), the
// llmc format of interchange.h. Version 3 holds fp32 values; version 5 (bf16) is read too.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::ckpt {

// Whether `head` (a file's first bytes) starts with llm.c's model magic, 20240326.
bool IsLlmcCheckpoint(std::string_view head);

// Writes a gpt2 model with kvHeads = heads and mlpWidth = 4 width. INVALID_ARGUMENT naming the
// model field otherwise.
absl::Status WriteLlmcCheckpoint(const std::string& path, const v1::ModelSpec& model, const nn::ParamLayout& layout,
                                 std::span<const float> params);

// The gpt2 model an llm.c file's header describes (every transformer field set).
absl::StatusOr<v1::ModelSpec> LlmcModel(std::string_view bytes, const std::string& path);

// Fills `params` (the layout's size) from the file's bytes. INVALID_ARGUMENT naming the header
// field and the model field when they differ; DATA_LOSS when the file is truncated or too long.
absl::Status ReadLlmcCheckpoint(std::string_view bytes, const std::string& path, const v1::ModelSpec& model,
                                const nn::ParamLayout& layout, std::span<float> params);

}  // namespace gradsync::ckpt
