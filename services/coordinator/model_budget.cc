#include "model_budget.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "gradsync/nn/model_config.h"
#include "gradsync/nn/presets.h"

namespace gradsync::coordinator {
namespace {

double GiB(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30); }

// Layer widths input to output, each layer a [out, in] weight and an [out] bias (nn's Mlp).
int64_t MlpParams(const v1::JobSpec& spec) {
  std::vector<int64_t> dims = {spec.data().synthetic().input_dim()};
  for (int32_t width : spec.model().mlp().hidden_dims()) dims.push_back(width);
  dims.push_back(spec.data().synthetic().num_classes());
  int64_t params = 0;
  for (size_t i = 0; i + 1 < dims.size(); ++i) params += dims[i + 1] * dims[i] + dims[i + 1];
  return params;
}

// The teacher's [H, D] and [C, H] fp64 weights (libs/data's synthetic_teacher.h).
int64_t TeacherBytes(const v1::SyntheticData& s) {
  const int64_t hidden = s.teacher_hidden();
  return static_cast<int64_t>(sizeof(double)) * hidden * (int64_t{s.input_dim()} + s.num_classes());
}

}  // namespace

absl::StatusOr<ModelFootprint> FootprintOf(const v1::JobSpec& spec) {
  ModelFootprint f;
  if (nn::IsTransformerPreset(spec.model().preset())) {
    absl::StatusOr<v1::TransformerConfig> config = nn::ResolveTransformerConfig(spec.model());
    if (!config.ok()) return config.status();
    absl::StatusOr<nn::TransformerDims> dims = nn::TransformerDims::FromConfig(*config);
    if (!dims.ok()) return dims.status();
    f.params = nn::NumParams(*dims);
    f.field = "model.transformer";
  } else {
    f.params = MlpParams(spec);
    f.field = "model.mlp.hiddenDims";
  }
  // Validation bounds every width (65536) and the layers, so these products fit in int64.
  f.model_bytes = f.params * kBytesPerParam;
  if (spec.data().has_synthetic()) f.teacher_bytes = TeacherBytes(spec.data().synthetic());
  return f;
}

absl::Status CheckModelBudget(const v1::JobSpec& spec, int64_t max_bytes) {
  absl::StatusOr<ModelFootprint> f = FootprintOf(spec);
  if (!f.ok()) return f.status();
  if (f->model_bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the model's %d parameters take %.1f GiB with their gradients and AdamW's two moments, over the %.1f GiB "
        "a worker gives one job's model (coordinator flag --max_model_bytes)",
        f->field, f->params, GiB(f->model_bytes), GiB(max_bytes)));
  }
  if (f->model_bytes + f->teacher_bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data.synthetic.teacherHidden: the synthetic task's teacher network takes %.1f GiB, which with the model's "
        "%.1f GiB is over the %.1f GiB a worker gives one job's model (coordinator flag --max_model_bytes)",
        GiB(f->teacher_bytes), GiB(f->model_bytes), GiB(max_bytes)));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::coordinator
