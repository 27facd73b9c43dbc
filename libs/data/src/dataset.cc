#include "gradsync/data/dataset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gradsync/data/token_dataset.h"
#include "gradsync/nn/presets.h"
#include "synthetic_teacher.h"

namespace gradsync::data {
namespace {

// Field names as users write them (the proto's JSON names), like the spec library's errors.
absl::Status CheckAtLeast(const char* field, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("data.synthetic.", field, ": must be at least ", min, ", got ", value));
}

absl::StatusOr<std::unique_ptr<Dataset>> CreateSynthetic(const gradsync::v1::JobSpec& spec) {
  if (nn::IsTransformerPreset(spec.model().preset())) {
    return absl::InvalidArgumentError(absl::StrCat("data.synthetic: only the mlp preset trains on synthetic data; ",
                                                   "a transformer needs data.text or data.shards, got model.preset \"",
                                                   spec.model().preset(), "\""));
  }
  const gradsync::v1::SyntheticData& s = spec.data().synthetic();
  for (absl::Status status :
       {CheckAtLeast("numSamples", s.num_samples(), 1), CheckAtLeast("inputDim", s.input_dim(), 1),
        CheckAtLeast("numClasses", s.num_classes(), 2), CheckAtLeast("teacherHidden", s.teacher_hidden(), 1)}) {
    if (!status.ok()) return status;
  }
  SyntheticTeacherConfig config;
  config.num_samples = s.num_samples();
  config.input_dim = s.input_dim();
  config.num_classes = s.num_classes();
  config.teacher_hidden = s.teacher_hidden();
  config.seed = s.seed();
  return std::make_unique<SyntheticTeacherDataset>(config);
}

// Token windows of the model's context length; the vocabulary bounds the shards' tokens.
absl::StatusOr<std::unique_ptr<Dataset>> CreateTokens(const gradsync::v1::JobSpec& spec) {
  const bool shards = spec.data().has_shards();
  const char* field = shards ? "data.shards" : "data.text";
  if (!nn::IsTransformerPreset(spec.model().preset())) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": token data needs a transformer preset, got model.preset \"", spec.model().preset(), "\""));
  }
  // Resolving again is a no-op on a filled spec and lets callers skip FillDefaults.
  absl::StatusOr<gradsync::v1::TransformerConfig> config = nn::ResolveTransformerConfig(spec.model());
  if (!config.ok()) return config.status();
  const auto& paths = shards ? spec.data().shards().paths() : spec.data().text().paths();
  if (paths.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".paths: must list at least one file"));
  absl::StatusOr<std::unique_ptr<TokenDataset>> tokens = TokenDataset::Load(
      std::vector<std::string>(paths.begin(), paths.end()), shards, config->seq_len(), config->vocab_size());
  if (!tokens.ok()) return tokens.status();
  return std::unique_ptr<Dataset>(*std::move(tokens));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Dataset>> CreateDataset(const gradsync::v1::JobSpec& spec) {
  switch (spec.data().source_case()) {
    case gradsync::v1::DataSpec::kSynthetic: return CreateSynthetic(spec);
    case gradsync::v1::DataSpec::kText:
    case gradsync::v1::DataSpec::kShards: return CreateTokens(spec);
    case gradsync::v1::DataSpec::SOURCE_NOT_SET: break;
  }
  return absl::InvalidArgumentError("data: no source set");
}

}  // namespace gradsync::data
