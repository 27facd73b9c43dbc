#include "gradsync/spec/job_plan.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "field_names.h"
#include "gradsync/nn/presets.h"

namespace gradsync::spec {
namespace {

// Field names as users write them (the proto's JSON names).
absl::Status CheckAtLeast(const char* field, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be at least ", min, ", got ", value));
}

absl::Status FirstError(std::initializer_list<absl::Status> statuses) {
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<nn::TransformerPlan> PlanTransformer(const v1::ModelSpec& model) {
  absl::StatusOr<v1::TransformerConfig> config = nn::ResolveTransformerConfig(model);
  if (!config.ok()) return config.status();
  absl::StatusOr<nn::TransformerDims> dims = nn::TransformerDims::FromConfig(*config);
  if (!dims.ok()) return dims.status();
  return nn::TransformerPlan{model.preset(), *std::move(config), *dims};
}

// The mlp's input and output sizes come from the synthetic task it learns.
absl::StatusOr<nn::MlpConfig> PlanMlp(const v1::JobSpec& spec) {
  if (!spec.data().has_synthetic()) {
    return absl::InvalidArgumentError(
        "data.synthetic: the mlp preset takes its input and output sizes from the synthetic "
        "data source, and none is set");
  }
  nn::MlpConfig config;
  config.input_dim = spec.data().synthetic().input_dim();
  config.num_classes = spec.data().synthetic().num_classes();
  if (absl::Status s = FirstError({CheckAtLeast("data.synthetic.inputDim", config.input_dim, 1),
                                   CheckAtLeast("data.synthetic.numClasses", config.num_classes, 2)});
      !s.ok()) {
    return s;
  }
  const v1::MlpConfig& mlp = spec.model().mlp();
  for (int i = 0; i < mlp.hidden_dims_size(); ++i) {
    const std::string field = absl::StrCat("model.mlp.hiddenDims[", i, "]");
    if (absl::Status s = CheckAtLeast(field.c_str(), mlp.hidden_dims(i), 1); !s.ok()) return s;
    config.hidden_dims.push_back(mlp.hidden_dims(i));
  }
  absl::StatusOr<nn::Activation> activation = nn::ParseActivation(mlp.activation());
  if (!activation.ok()) return activation.status();
  config.activation = *activation;
  return config;
}

absl::StatusOr<data::SyntheticPlan> PlanSynthetic(const v1::JobSpec& spec) {
  if (nn::IsTransformerPreset(spec.model().preset())) {
    return absl::InvalidArgumentError(absl::StrCat("data.synthetic: only the mlp preset trains on synthetic data; ",
                                                   "a transformer needs data.text or data.shards, got model.preset \"",
                                                   spec.model().preset(), "\""));
  }
  const v1::SyntheticData& s = spec.data().synthetic();
  if (absl::Status status = FirstError({CheckAtLeast("data.synthetic.numSamples", s.num_samples(), 1),
                                        CheckAtLeast("data.synthetic.inputDim", s.input_dim(), 1),
                                        CheckAtLeast("data.synthetic.numClasses", s.num_classes(), 2),
                                        CheckAtLeast("data.synthetic.teacherHidden", s.teacher_hidden(), 1)});
      !status.ok()) {
    return status;
  }
  return data::SyntheticPlan{s.num_samples(), s.input_dim(), s.num_classes(), s.teacher_hidden(), s.seed()};
}

// Token windows of the model's context length; the vocabulary bounds the tokens.
absl::StatusOr<data::TokenPlan> PlanTokens(const v1::JobSpec& spec, const nn::TransformerPlan* planned) {
  const bool shards = spec.data().has_shards();
  const char* field = shards ? "data.shards" : "data.text";
  if (!nn::IsTransformerPreset(spec.model().preset())) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": token data needs a transformer preset, got model.preset \"", spec.model().preset(), "\""));
  }
  absl::StatusOr<nn::TransformerPlan> model = planned != nullptr ? *planned : PlanTransformer(spec.model());
  if (!model.ok()) return model.status();
  const auto& paths = shards ? spec.data().shards().paths() : spec.data().text().paths();
  if (paths.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".paths: must list at least one file"));
  return data::TokenPlan{{paths.begin(), paths.end()}, shards, model->dims.seq_len, model->dims.vocab};
}

absl::StatusOr<std::optional<data::ValidationPlan>> PlanValidation(const v1::JobSpec& spec,
                                                                   const nn::TransformerPlan* planned) {
  const v1::ValidationData& v = spec.data().validation();
  if (v.disabled() || v.paths().empty()) return std::nullopt;
  absl::StatusOr<nn::TransformerPlan> model = planned != nullptr ? *planned : PlanTransformer(spec.model());
  if (!model.ok()) return model.status();
  return data::ValidationPlan{{v.paths().begin(), v.paths().end()}, model->dims.seq_len, model->dims.vocab};
}

// PlanData with the transformer already planned (null: planned here, as often as needed).
absl::StatusOr<data::DataPlan> PlanDataWith(const v1::JobSpec& spec, const nn::TransformerPlan* planned) {
  data::DataPlan plan;
  switch (spec.data().source_case()) {
    case v1::DataSpec::kSynthetic: {
      absl::StatusOr<data::SyntheticPlan> synthetic = PlanSynthetic(spec);
      if (!synthetic.ok()) return synthetic.status();
      plan.source = *synthetic;
      break;
    }
    case v1::DataSpec::kText:
    case v1::DataSpec::kShards: {
      absl::StatusOr<data::TokenPlan> tokens = PlanTokens(spec, planned);
      if (!tokens.ok()) return tokens.status();
      plan.source = *std::move(tokens);
      break;
    }
    case v1::DataSpec::SOURCE_NOT_SET: return absl::InvalidArgumentError("data: no source set");
  }
  absl::StatusOr<std::optional<data::ValidationPlan>> validation = PlanValidation(spec, planned);
  if (!validation.ok()) return validation.status();
  plan.validation = *std::move(validation);
  return plan;
}

// "; did you mean NAME?" for the parameter or buffer closest to `name` when it is close enough to
// be a slip (a quarter of its length, at least 2 edits), otherwise "".
std::string ClosestName(const std::string& name, const std::vector<std::string>& params,
                        const std::vector<std::string>& buffers) {
  std::vector<const std::string*> candidates;
  for (const std::vector<std::string>* list : {&params, &buffers}) {
    for (const std::string& candidate : *list) candidates.push_back(&candidate);
  }
  const std::string* best = internal::Closest(name, candidates, std::max<size_t>(2, name.size() / 4));
  return best == nullptr ? "" : absl::StrCat("; did you mean ", *best, "?");
}

}  // namespace

absl::StatusOr<nn::ModelPlan> PlanModel(const v1::JobSpec& spec) {
  if (spec.has_script()) {
    return absl::FailedPreconditionError("a script job (script.command) builds its own model; it has no model plan");
  }
  const std::string& preset = spec.model().preset();
  nn::ModelPlan plan;
  plan.seed = spec.training().seed();
  if (preset == "mlp") {
    absl::StatusOr<nn::MlpConfig> mlp = PlanMlp(spec);
    if (!mlp.ok()) return mlp.status();
    plan.arch = *std::move(mlp);
  } else if (nn::IsTransformerPreset(preset)) {
    absl::StatusOr<nn::TransformerPlan> transformer = PlanTransformer(spec.model());
    if (!transformer.ok()) return transformer.status();
    plan.arch = *std::move(transformer);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("model.preset: unknown preset \"", preset,
                                                   "\"; known: ", absl::StrJoin(nn::ModelPresetNames(), ", ")));
  }
  return plan;
}

absl::StatusOr<data::DataPlan> PlanData(const v1::JobSpec& spec) { return PlanDataWith(spec, nullptr); }

absl::StatusOr<SchedulePlan> PlanSchedule(const v1::JobSpec& spec) {
  const absl::StatusOr<LastBatch> last_batch = ParseLastBatch(spec.data().last_batch());
  if (!last_batch.ok()) return last_batch.status();
  const absl::StatusOr<LrSchedule> lr_schedule = ParseLrSchedule(spec.training().lr_schedule());
  if (!lr_schedule.ok()) return lr_schedule.status();
  const absl::StatusOr<Recovery> recovery = ParseRecovery(spec.training().recovery());
  if (!recovery.ok()) return recovery.status();
  const v1::TrainingSpec& t = spec.training();
  SchedulePlan p;
  p.max_steps = t.max_steps();
  p.epochs = t.epochs();
  p.seed = t.seed();
  p.micro_batch = t.micro_batch();
  p.grad_accum_steps = t.grad_accum_steps();
  p.last_batch = *last_batch;
  p.lr = t.lr();
  p.warmup_steps = t.warmup_steps();
  p.min_lr_ratio = t.min_lr_ratio();
  p.lr_schedule = *lr_schedule;
  p.beta1 = t.beta1();
  p.beta2 = t.beta2();
  p.eps = t.eps();
  p.weight_decay = t.weight_decay();
  p.grad_clip = t.grad_clip();
  p.log_every = t.log_every();
  p.eval_every = t.eval_every();
  p.recovery = *recovery;
  return p;
}

absl::StatusOr<IgnorePlan> PlanIgnore(const v1::JobSpec& spec, const nn::ModelPlan& model) {
  const std::vector<std::string> buffers = model.BufferNames();
  const std::vector<std::string> params = model.ParamNames();
  IgnorePlan plan;
  for (int i = 0; i < spec.ddp().ignore_params_size(); ++i) {
    const std::string& name = spec.ddp().ignore_params(i);
    const bool buffer = std::find(buffers.begin(), buffers.end(), name) != buffers.end();
    const bool prefix = absl::EndsWith(name, ".");
    const bool param = std::any_of(params.begin(), params.end(), [&](const std::string& p) {
      return prefix ? absl::StartsWith(p, name) : p == name;
    });
    if (!buffer && !param) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ddp.ignoreParams[", i, "]: \"", name, "\" names no parameter", buffers.empty() ? "" : " or buffer",
          " of the model", ClosestName(name, params, buffers), " (gradsync model params ", spec.model().preset(),
          " lists them; a name ending in \".\" names every parameter under it)"));
    }
    (buffer ? plan.buffers : plan.params).push_back(name);
  }
  return plan;
}

std::string IgnoredBuffersNotice(const IgnorePlan& ignore) {
  if (ignore.buffers.empty()) return "";
  return absl::StrCat("ddp.ignoreParams: ", absl::StrJoin(ignore.buffers, ", "), ignore.buffers.size() == 1 ? " is" : " are",
                      " the model's RoPE tables, buffers every rank computes alike and never synchronises: nothing is "
                      "left out of the gradient buckets for ", ignore.buffers.size() == 1 ? "it" : "them");
}

absl::StatusOr<JobPlan> PlanJob(const v1::JobSpec& spec) {
  absl::StatusOr<nn::ModelPlan> model = PlanModel(spec);
  if (!model.ok()) return model.status();
  absl::StatusOr<data::DataPlan> data = PlanDataWith(spec, model->transformer());
  if (!data.ok()) return data.status();
  absl::StatusOr<SchedulePlan> schedule = PlanSchedule(spec);
  if (!schedule.ok()) return schedule.status();
  absl::StatusOr<Sharding> sharding = ParseSharding(spec.ddp().sharding());
  if (!sharding.ok()) return sharding.status();
  absl::StatusOr<IgnorePlan> ignore = PlanIgnore(spec, *model);
  if (!ignore.ok()) return ignore.status();
  return JobPlan{*std::move(model), *std::move(data), *schedule, *sharding, *std::move(ignore)};
}

}  // namespace gradsync::spec
