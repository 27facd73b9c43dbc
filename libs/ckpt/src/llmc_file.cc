#include "llmc_file.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "file_io.h"
#include "gradsync/nn/transformer_params.h"
#include "tensor_slots.h"

namespace gradsync::ckpt {
namespace {

constexpr int32_t kMagic = 20240326;
constexpr int32_t kVersionFp32 = 3;
constexpr int32_t kVersionBf16 = 5;
constexpr int kHeaderInts = 256;
constexpr int64_t kVocabMultiple = 128;  // llm.c pads the vocabulary to this for its GPU kernels

using Header = std::array<int32_t, kHeaderInts>;

// One header field, the dimension it must equal and the spec field that sets that dimension.
struct HeaderField {
  int index;
  const char* name;
  int64_t model_value;
  const char* spec_field;
};

// The parameters in llm.c's order: wte, wpe, then each kind stacked over the layers, then lnf.
std::vector<int> LlmcOrder(const nn::TransformerParams& p) {
  std::vector<int> order = {p.wte, p.wpe};
  using B = nn::TransformerBlockParams;
  for (int B::*kind : {&B::norm1_w, &B::norm1_b, &B::qkv_w, &B::qkv_b, &B::attn_out_w, &B::attn_out_b, &B::norm2_w,
                       &B::norm2_b, &B::fc_w, &B::fc_b, &B::mlp_out_w, &B::mlp_out_b}) {
    for (const B& block : p.blocks) order.push_back(block.*kind);
  }
  order.push_back(p.normf_w);
  order.push_back(p.normf_b);
  return order;
}

absl::StatusOr<nn::TransformerDims> LlmcDims(const v1::ModelSpec& model) {
  absl::StatusOr<nn::TransformerDims> d = DimsOf(model);
  if (!d.ok()) return d.status();
  if (!d->gpt2()) return absl::InvalidArgumentError("model.transformer.flavour: llm.c's checkpoint holds gpt2 only");
  if (d->kv_heads != d->heads) {
    return absl::InvalidArgumentError("model.transformer.kvHeads: llm.c's GPT-2 has no grouped-query attention");
  }
  if (d->mlp_width != 4 * d->width) {
    return absl::InvalidArgumentError(absl::StrCat("model.transformer.mlpWidth: llm.c's GPT-2 has 4 x width (",
                                                   4 * d->width, "), got ", d->mlp_width));
  }
  return d;
}

int64_t PaddedVocab(int64_t v) { return (v + kVocabMultiple - 1) / kVocabMultiple * kVocabMultiple; }

}  // namespace

bool IsLlmcCheckpoint(std::string_view head) {
  int32_t magic = 0;
  if (head.size() < sizeof(magic)) return false;
  std::memcpy(&magic, head.data(), sizeof(magic));
  return magic == kMagic;
}

absl::Status WriteLlmcCheckpoint(const std::string& path, const v1::ModelSpec& model, const nn::ParamLayout& layout,
                                 std::span<const float> params) {
  absl::StatusOr<nn::TransformerDims> d = LlmcDims(model);
  if (!d.ok()) return d.status();
  nn::ParamLayout scratch;
  const nn::TransformerParams index = nn::AddTransformerParams(*d, &scratch);
  if (scratch.Hash() != layout.Hash()) {
    return absl::InvalidArgumentError("the parameter layout is not the one its model spec describes");
  }
  Header h{};
  const int64_t vp = PaddedVocab(d->vocab);
  h[0] = kMagic;
  h[1] = kVersionFp32;
  h[2] = static_cast<int32_t>(d->seq_len);
  h[3] = static_cast<int32_t>(d->vocab);
  h[4] = static_cast<int32_t>(d->layers);
  h[5] = static_cast<int32_t>(d->heads);
  h[6] = static_cast<int32_t>(d->width);
  h[7] = static_cast<int32_t>(vp);
  absl::StatusOr<AtomicFile> file = AtomicFile::Create(path);
  if (!file.ok()) return file.status();
  if (absl::Status s = file->Append(std::as_bytes(std::span(h))); !s.ok()) return s;
  for (int i : LlmcOrder(index)) {
    if (absl::Status s = file->Append(std::as_bytes(layout.View(params, i))); !s.ok()) return s;
    if (i == index.wte) {
      const std::vector<float> padding((vp - d->vocab) * d->width, 0.0f);
      if (absl::Status s = file->Append(std::as_bytes(std::span(padding))); !s.ok()) return s;
    }
  }
  return file->Commit();
}

absl::StatusOr<v1::ModelSpec> LlmcModel(std::string_view bytes, const std::string& path) {
  Header h{};
  if (bytes.size() < sizeof(h) || !IsLlmcCheckpoint(bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": not an llm.c checkpoint (short, or no magic 20240326)"));
  }
  std::memcpy(h.data(), bytes.data(), sizeof(h));
  v1::ModelSpec model;
  model.set_preset("gpt2-124m");
  v1::TransformerConfig& t = *model.mutable_transformer();
  t.set_flavour("gpt2");
  t.set_seq_len(h[2]);
  t.set_vocab_size(h[3]);
  t.set_layers(h[4]);
  t.set_heads(h[5]);
  t.set_kv_heads(h[5]);
  t.set_width(h[6]);
  t.set_mlp_width(4 * h[6]);
  t.set_norm_eps(1e-5);
  // What the header describes must be in the file before anything is sized by it: a 1 KiB file
  // may claim a model of billions of parameters.
  absl::StatusOr<nn::TransformerDims> d = LlmcDims(model);
  if (!d.ok()) return absl::DataLossError(absl::StrCat(path, ": its llm.c header describes no model: ", d.status().message()));
  nn::ParamLayout scratch;
  nn::AddTransformerParams(*d, &scratch);
  const int64_t padding = std::max<int64_t>(0, int64_t{h[7]} - d->vocab) * d->width;
  const int64_t value_bytes = h[1] == kVersionBf16 ? 2 : 4;
  const int64_t needed = static_cast<int64_t>(sizeof(h)) + (scratch.total_numel() + padding) * value_bytes;
  if (static_cast<int64_t>(bytes.size()) < needed) {
    return absl::DataLossError(absl::StrCat(path, ": its llm.c header describes ", scratch.total_numel(),
                                            " parameters (", needed, " bytes), but the file holds ", bytes.size(),
                                            " bytes: truncated, or not that model"));
  }
  return model;
}

absl::Status ReadLlmcCheckpoint(std::string_view bytes, const std::string& path, const v1::ModelSpec& model,
                                const nn::ParamLayout& layout, std::span<float> params) {
  absl::StatusOr<nn::TransformerDims> d = LlmcDims(model);
  if (!d.ok()) return d.status();
  Header h{};
  if (bytes.size() < sizeof(h) || !IsLlmcCheckpoint(bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": not an llm.c checkpoint (short, or no magic 20240326)"));
  }
  std::memcpy(h.data(), bytes.data(), sizeof(h));
  if (h[1] != kVersionFp32 && h[1] != kVersionBf16) {
    return absl::DataLossError(
        absl::StrCat(path, ": llm.c checkpoint version ", h[1], "; gradsync reads 3 (fp32) and 5 (bf16)"));
  }
  const HeaderField fields[] = {{2, "max_seq_len", d->seq_len, "model.transformer.seqLen"},
                                {3, "vocab_size", d->vocab, "model.transformer.vocabSize"},
                                {4, "num_layers", d->layers, "model.transformer.layers"},
                                {5, "num_heads", d->heads, "model.transformer.heads"},
                                {6, "channels", d->width, "model.transformer.width"}};
  for (const HeaderField& f : fields) {
    if (h[f.index] != f.model_value) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": llm.c header ", f.name, " is ", h[f.index],
                                                     "; the model has ", f.model_value, " (", f.spec_field, ")"));
    }
  }
  const int64_t vp = h[7];
  if (vp < d->vocab || vp > d->vocab + (1 << 20)) {
    return absl::DataLossError(absl::StrCat(path, ": llm.c header padded_vocab_size ", vp, " is below vocab_size"));
  }
  const size_t value_bytes = h[1] == kVersionFp32 ? 4 : 2;
  const int64_t values = layout.total_numel() + (vp - d->vocab) * d->width;
  if (bytes.size() != sizeof(h) + static_cast<uint64_t>(values) * value_bytes) {
    return absl::DataLossError(absl::StrCat(path, ": ", bytes.size(), " bytes; its header describes ",
                                            sizeof(h) + values * value_bytes, " (truncated or not this model)"));
  }
  nn::ParamLayout scratch;
  const nn::TransformerParams index = nn::AddTransformerParams(*d, &scratch);
  if (scratch.Hash() != layout.Hash()) {
    return absl::InvalidArgumentError("the parameter layout is not the one its model spec describes");
  }
  const char* at = bytes.data() + sizeof(h);
  for (int i : LlmcOrder(index)) {
    std::span<float> dst = layout.View(params, i);
    for (float& x : dst) {
      if (value_bytes == 4) {
        std::memcpy(&x, at, 4);
      } else {
        uint16_t b;
        std::memcpy(&b, at, 2);
        x = std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
      }
      at += value_bytes;
    }
    if (i == index.wte) at += (vp - d->vocab) * d->width * value_bytes;  // padding rows
  }
  return absl::OkStatus();
}

}  // namespace gradsync::ckpt
