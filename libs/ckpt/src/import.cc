// ImportWeights and ReadModelWeights: every source interchange.h names, told apart by what it is
// (a directory with a manifest or a model.safetensors) or by its first bytes.
#include <filesystem>
#include <map>

#include "gradsync/core/json_depth.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "file_io.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/ckpt/interchange.h"
#include "llmc_file.h"
#include "tensor_slots.h"

namespace gradsync::ckpt {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kWeightsMagic = "GSWEIGHT";

absl::Status Mismatch(const std::string& path, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", problem));
}

// Parameter by parameter, `got` (from the file) must be `want` (the model's).
absl::Status CompareLayouts(const std::string& path, const nn::ParamLayout& got, const nn::ParamLayout& want) {
  for (int i = 0; i < std::max(got.size(), want.size()); ++i) {
    if (i >= got.size()) return Mismatch(path, absl::StrCat("has no tensor \"", want.param(i).name, "\""));
    if (i >= want.size()) {
      return Mismatch(path, absl::StrCat("holds tensor \"", got.param(i).name, "\", which the model has no place for"));
    }
    const nn::ParamInfo &g = got.param(i), &w = want.param(i);
    if (g.name != w.name) {
      return Mismatch(path, absl::StrCat("tensor ", i, " is \"", g.name, "\"; the model's is \"", w.name, "\""));
    }
    if (g.shape != w.shape) {
      return Mismatch(path, absl::StrCat("tensor \"", g.name, "\" has shape ", ShapeText(g.shape), "; the model needs ",
                                         ShapeText(w.shape)));
    }
  }
  return absl::OkStatus();
}

// Hugging Face's non-parameters (the causal mask, rotary frequencies), which a model recomputes.
bool IsHfBuffer(const std::string& name) {
  return absl::EndsWith(name, ".attn.bias") || absl::EndsWith(name, ".attn.masked_bias") ||
         absl::EndsWith(name, ".rotary_emb.inv_freq");
}

// The tied output projection, when a file stores it: it must be the embedding, bit for bit.
absl::Status CheckTiedHead(const std::string& path, const NamedTensor& head, const nn::ParamLayout& layout,
                           std::span<const float> params) {
  const std::span<const float> embedding = layout.View(params, 0);
  if (head.shape != layout.param(0).shape || !std::equal(embedding.begin(), embedding.end(), head.values.begin())) {
    return Mismatch(path, absl::StrCat("tensor \"", head.name,
                                       "\" differs from the token embedding; gradsync ties "
                                       "the output projection to it"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ImportedWeights> FromSafetensors(const std::string& path, SafetensorsFile file,
                                                const v1::ModelSpec& model, const nn::ParamLayout& layout) {
  std::map<std::string, NamedTensor*> by_name;
  for (NamedTensor& t : file.tensors) by_name[t.name] = &t;
  const bool own_names = layout.size() > 0 && by_name.count(layout.param(0).name) > 0;
  const bool prefix = !by_name.count("wte.weight");
  absl::StatusOr<std::vector<TensorSlot>> slots =
      Slots(model, layout, own_names ? SlotNames::kGradsync : SlotNames::kHf, prefix);
  if (!slots.ok()) return slots.status();
  ImportedWeights out;
  out.kind = own_names ? "safetensors (gradsync names)" : "safetensors (Hugging Face names)";
  out.params.assign(layout.total_numel(), 0.0f);
  for (const TensorSlot& slot : *slots) {
    const std::vector<int64_t> shape = SlotShape(slot, layout);
    const auto it = by_name.find(slot.name);
    if (it == by_name.end()) {
      return Mismatch(path, absl::StrCat("has no tensor \"", slot.name, "\" (the model needs ", ShapeText(shape), ")"));
    }
    if (it->second->shape != shape) {
      return Mismatch(path, absl::StrCat("tensor \"", slot.name, "\" has shape ", ShapeText(it->second->shape),
                                         "; the model needs ", ShapeText(shape)));
    }
    Insert(slot, layout, it->second->values, out.params);
    by_name.erase(it);
  }
  for (const auto& [name, tensor] : by_name) {
    if (!own_names && IsHfBuffer(name)) continue;
    if (!own_names && name == "lm_head.weight") {
      if (absl::Status s = CheckTiedHead(path, *tensor, layout, out.params); !s.ok()) return s;
      continue;
    }
    return Mismatch(path, absl::StrCat("holds tensor \"", name, "\", which the model has no place for"));
  }
  return out;
}

// A committed checkpoint's whole state, rank 0's values where parts overlap (its copy of any
// ignored parameter is the one weights files keep).
absl::StatusOr<RankState> RankZeroState(const std::string& dir) {
  absl::StatusOr<v1::CheckpointManifest> manifest = ReadManifest(dir);
  if (!manifest.ok()) return manifest.status();
  manifest->set_dir(dir);
  return ReadCheckpointState(*manifest, 0);
}

absl::StatusOr<ImportedWeights> FromCheckpoint(const std::string& dir, const nn::ParamLayout& layout) {
  absl::StatusOr<RankState> state = RankZeroState(dir);
  if (!state.ok()) return state.status();
  if (absl::Status s = CompareLayouts(dir, state->layout, layout); !s.ok()) return s;
  ImportedWeights out;
  out.kind = "checkpoint";
  out.params = state->params;
  out.checkpoint = *std::move(state);
  return out;
}

// The file to read for `path`: itself, or the safetensors file of an export directory. Sets
// `checkpoint` for a committed checkpoint directory.
absl::StatusOr<std::string> SourceFile(const std::string& path, bool* checkpoint) {
  std::error_code ec;
  *checkpoint = false;
  if (!fs::is_directory(path, ec)) return path;
  if (fs::exists(fs::path(path) / kManifestFile, ec)) {
    *checkpoint = true;
    return path;
  }
  if (fs::exists(fs::path(path) / kSafetensorsFile, ec)) return (fs::path(path) / kSafetensorsFile).string();
  return absl::InvalidArgumentError(absl::StrCat(path, ": a directory with neither ", kManifestFile,
                                                 " (a committed checkpoint) nor ", kSafetensorsFile));
}

absl::StatusOr<WeightsFile> WeightsFromCheckpoint(const std::string& dir) {
  absl::StatusOr<RankState> state = RankZeroState(dir);
  if (!state.ok()) return state.status();
  return WeightsFile{state->model, state->layout, std::move(state->params)};
}

// The model a file describes itself: llm.c's header, or the metadata of gradsync's exports.
absl::StatusOr<v1::ModelSpec> DescribedModel(const std::string& path, std::string_view bytes,
                                             const SafetensorsFile* file) {
  if (file == nullptr) return LlmcModel(bytes, path);
  const auto it = file->metadata.find(kModelMetadataKey);
  if (it == file->metadata.end()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the file does not say which model it holds (no \"",
                                                   kModelMetadataKey, "\" metadata); name the model"));
  }
  v1::ModelSpec model;
  if (!CheckJsonDepth(it->second, path).ok() || !google::protobuf::util::JsonStringToMessage(it->second, &model).ok()) {
    return absl::DataLossError(absl::StrCat(path, ": unreadable \"", kModelMetadataKey, "\" metadata"));
  }
  return model;
}

}  // namespace

absl::StatusOr<ImportedWeights> ImportWeights(const std::string& path, const v1::ModelSpec& model,
                                              const nn::ParamLayout& layout) {
  bool checkpoint = false;
  absl::StatusOr<std::string> source = SourceFile(path, &checkpoint);
  if (!source.ok()) return source.status();
  if (checkpoint) return FromCheckpoint(path, layout);
  absl::StatusOr<std::string> bytes = ReadWholeFile(*source);
  if (!bytes.ok()) return bytes.status();
  if (absl::StartsWith(*bytes, kWeightsMagic)) {
    absl::StatusOr<WeightsFile> w = LoadWeights(*source);
    if (!w.ok()) return w.status();
    if (absl::Status s = CompareLayouts(*source, w->layout, layout); !s.ok()) return s;
    return ImportedWeights{std::move(w->values), std::nullopt, "gradsync weights file"};
  }
  if (IsLlmcCheckpoint(*bytes)) {
    ImportedWeights out{std::vector<float>(layout.total_numel()), std::nullopt, "llm.c checkpoint"};
    if (absl::Status s = ReadLlmcCheckpoint(*bytes, *source, model, layout, out.params); !s.ok()) return s;
    return out;
  }
  absl::StatusOr<SafetensorsFile> file = ParseSafetensors(*bytes, *source);
  if (!file.ok()) return file.status();
  return FromSafetensors(*source, *std::move(file), model, layout);
}

absl::StatusOr<WeightsFile> ReadModelWeights(const std::string& path) {
  bool checkpoint = false;
  absl::StatusOr<std::string> source = SourceFile(path, &checkpoint);
  if (!source.ok()) return source.status();
  if (checkpoint) return WeightsFromCheckpoint(path);
  absl::StatusOr<std::string> bytes = ReadWholeFile(*source);
  if (!bytes.ok()) return bytes.status();
  if (absl::StartsWith(*bytes, kWeightsMagic)) return LoadWeights(*source);
  std::optional<SafetensorsFile> file;
  if (!IsLlmcCheckpoint(*bytes)) {
    absl::StatusOr<SafetensorsFile> parsed = ParseSafetensors(*bytes, *source);
    if (!parsed.ok()) return parsed.status();
    file = *std::move(parsed);
  }
  absl::StatusOr<v1::ModelSpec> model = DescribedModel(*source, *bytes, file ? &*file : nullptr);
  if (!model.ok()) return model.status();
  absl::StatusOr<nn::ParamLayout> layout = TransformerLayout(*model);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<ImportedWeights> imported =
      file ? FromSafetensors(*source, *std::move(file), *model, *layout) : ImportWeights(*source, *model, *layout);
  if (!imported.ok()) return imported.status();
  return WeightsFile{*std::move(model), *std::move(layout), std::move(imported->params)};
}

}  // namespace gradsync::ckpt
