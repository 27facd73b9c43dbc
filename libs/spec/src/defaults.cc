// Default values of a job spec. proto3 scalars have no presence, so "unset" means zero or empty;
// where zero is a meaningful setting (training.seed, weightDecay, gradClip, warmupSteps) the
// default is zero itself and the field is left alone. The table is in README.md. A transformer
// preset's values come from gradsync/nn/presets.h, the one table of them.
#include <cstdint>
#include <string>

#include "gradsync/nn/presets.h"
#include "gradsync/spec/choices.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::spec {
namespace {

constexpr char kDefaultName[] = "job";
constexpr char kDefaultPreset[] = "mlp";
constexpr int32_t kDefaultHiddenDims[] = {128, 128};
constexpr char kDefaultActivation[] = "gelu";
constexpr Device kDefaultDevice = Device::kAuto;
constexpr Precision kDefaultPrecision = Precision::kAuto;

constexpr int64_t kDefaultNumSamples = 8192;
constexpr int32_t kDefaultInputDim = 32;
constexpr int32_t kDefaultNumClasses = 10;
constexpr int32_t kDefaultTeacherHidden = 64;
// The dataset seed cannot be 0: zero reads as unset and becomes this value.
constexpr uint64_t kDefaultDataSeed = 1234;
constexpr LastBatch kDefaultLastBatch = LastBatch::kPartial;

constexpr int32_t kDefaultWorldSize = 1;
constexpr int32_t kDefaultMicroBatch = 32;
constexpr int32_t kDefaultGradAccumSteps = 1;
constexpr int32_t kDefaultEpochs = 1;
constexpr double kDefaultLr = 1e-3;
constexpr double kDefaultBeta1 = 0.9;
constexpr double kDefaultBeta2 = 0.95;
constexpr double kDefaultEps = 1e-8;
constexpr LrSchedule kDefaultLrSchedule = LrSchedule::kCosine;
constexpr double kDefaultMinLrRatio = 0.1;
constexpr int32_t kDefaultLogEvery = 10;
// Ten points on the validation curve of a 1000-step run (llm.c's GPT-2 recipes evaluate every 250
// steps, nanoGPT's every 250 to 2000 on longer runs). Each evaluation is a forward pass over the
// whole validation set, so a large one wants a larger value, or 0: after the last step only.
constexpr int64_t kDefaultEvalEvery = 100;

constexpr Backend kDefaultBackend = Backend::kAuto;
constexpr Transport kDefaultTransport = Transport::kAuto;
constexpr GradCompression kDefaultGradCompression = GradCompression::kNone;
constexpr Sharding kDefaultSharding = Sharding::kNone;
constexpr double kDefaultBucketCapMb = 25;
constexpr double kDefaultTimeoutSeconds = 300;

void FillModel(gradsync::v1::ModelSpec* model) {
  if (model->preset().empty()) model->set_preset(kDefaultPreset);
  if (model->device().empty()) model->set_device(Name(kDefaultDevice));
  if (model->precision().empty()) model->set_precision(Name(kDefaultPrecision));
  if (nn::IsTransformerPreset(model->preset())) {
    // Every field, so that the stored spec says which network ran even if a preset changes.
    *model->mutable_transformer() = *nn::ResolveTransformerConfig(*model);
    return;
  }
  if (model->preset() != kDefaultPreset) return;
  gradsync::v1::MlpConfig* mlp = model->mutable_mlp();
  if (mlp->hidden_dims().empty()) {
    for (int32_t width : kDefaultHiddenDims) mlp->add_hidden_dims(width);
  }
  if (mlp->activation().empty()) mlp->set_activation(kDefaultActivation);
}

// Synthetic data is the mlp preset's task; a transformer's text has no sensible default, so a
// transformer spec without a source stays without one and validation names what is missing.
void FillData(const std::string& preset, gradsync::v1::DataSpec* data) {
  if (data->last_batch().empty()) data->set_last_batch(Name(kDefaultLastBatch));
  if (data->source_case() == gradsync::v1::DataSpec::SOURCE_NOT_SET && !nn::IsTransformerPreset(preset)) {
    data->mutable_synthetic();
  }
  if (!data->has_synthetic()) return;
  gradsync::v1::SyntheticData* synthetic = data->mutable_synthetic();
  if (synthetic->num_samples() == 0) synthetic->set_num_samples(kDefaultNumSamples);
  if (synthetic->input_dim() == 0) synthetic->set_input_dim(kDefaultInputDim);
  if (synthetic->num_classes() == 0) synthetic->set_num_classes(kDefaultNumClasses);
  if (synthetic->teacher_hidden() == 0) synthetic->set_teacher_hidden(kDefaultTeacherHidden);
  if (synthetic->seed() == 0) synthetic->set_seed(kDefaultDataSeed);
}

void FillTraining(gradsync::v1::TrainingSpec* training) {
  if (training->world_size() == 0) {
    training->set_world_size(training->max_workers() > 0 ? training->max_workers() : kDefaultWorldSize);
  }
  if (training->max_workers() == 0) training->set_max_workers(training->world_size());
  if (training->min_workers() == 0) training->set_min_workers(training->max_workers());
  if (training->micro_batch() == 0) training->set_micro_batch(kDefaultMicroBatch);
  if (training->grad_accum_steps() == 0) training->set_grad_accum_steps(kDefaultGradAccumSteps);
  if (training->max_steps() == 0 && training->epochs() == 0) training->set_epochs(kDefaultEpochs);
  if (training->lr() == 0) training->set_lr(kDefaultLr);
  if (training->beta1() == 0) training->set_beta1(kDefaultBeta1);
  if (training->beta2() == 0) training->set_beta2(kDefaultBeta2);
  if (training->eps() == 0) training->set_eps(kDefaultEps);
  if (training->lr_schedule().empty()) training->set_lr_schedule(Name(kDefaultLrSchedule));
  if (training->min_lr_ratio() == 0) training->set_min_lr_ratio(kDefaultMinLrRatio);
  if (training->log_every() == 0) training->set_log_every(kDefaultLogEvery);
  if (!training->has_eval_every()) training->set_eval_every(kDefaultEvalEvery);
}

void FillDdp(gradsync::v1::DdpSpec* ddp) {
  if (ddp->backend().empty()) ddp->set_backend(Name(kDefaultBackend));
  if (ddp->transport().empty()) ddp->set_transport(Name(kDefaultTransport));
  if (ddp->grad_compression().empty()) ddp->set_grad_compression(Name(kDefaultGradCompression));
  if (ddp->sharding().empty()) ddp->set_sharding(Name(kDefaultSharding));
  if (ddp->bucket_cap_mb() == 0) ddp->set_bucket_cap_mb(kDefaultBucketCapMb);
  if (ddp->timeout_seconds() == 0) ddp->set_timeout_seconds(kDefaultTimeoutSeconds);
}

}  // namespace

void FillDefaults(gradsync::v1::JobSpec* spec) {
  if (spec->name().empty()) spec->set_name(kDefaultName);
  FillModel(spec->mutable_model());
  FillData(spec->model().preset(), spec->mutable_data());
  FillTraining(spec->mutable_training());
  FillDdp(spec->mutable_ddp());
}

}  // namespace gradsync::spec
