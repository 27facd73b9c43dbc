// Default values of a job spec. The `optional` scalars have presence: a default fills only an
// unset one, and a zero given explicitly stays for validation to judge (`worldSize: 0` is refused,
// `minLrRatio: 0` decays to zero). The others are plain proto3 scalars, where zero or empty is
// unset: strings, and fields whose default is zero itself (training.seed, weightDecay, gradClip,
// warmupSteps). The table is in README.md. A transformer
// preset's values come from gradsync/nn/presets.h, the one table of them.
#include <cstdint>
#include <string>

#include "gradsync/nn/presets.h"
#include "gradsync/spec/choices.h"
#include "gradsync/spec/job_spec.h"
#include "script_spec.h"

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
constexpr Recovery kDefaultRecovery = Recovery::kLive;
constexpr double kDefaultMinLrRatio = 0.1;
constexpr int32_t kDefaultLogEvery = 10;
// torchrun's --max-restarts defaults to 0; a job here gets a few, as its workers may be lost.
constexpr int32_t kDefaultMaxRestarts = 3;
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
  if (!synthetic->has_num_samples()) synthetic->set_num_samples(kDefaultNumSamples);
  if (!synthetic->has_input_dim()) synthetic->set_input_dim(kDefaultInputDim);
  if (!synthetic->has_num_classes()) synthetic->set_num_classes(kDefaultNumClasses);
  if (!synthetic->has_teacher_hidden()) synthetic->set_teacher_hidden(kDefaultTeacherHidden);
  if (!synthetic->has_seed()) synthetic->set_seed(kDefaultDataSeed);
}

// The gang: every job has one, a script job's included.
void FillGang(gradsync::v1::TrainingSpec* training) {
  if (!training->has_world_size()) {
    training->set_world_size(training->has_max_workers() ? training->max_workers() : kDefaultWorldSize);
  }
  if (!training->has_max_workers()) training->set_max_workers(training->world_size());
  if (!training->has_min_workers()) training->set_min_workers(training->max_workers());
}

void FillTraining(gradsync::v1::TrainingSpec* training) {
  FillGang(training);
  if (!training->has_micro_batch()) training->set_micro_batch(kDefaultMicroBatch);
  if (!training->has_grad_accum_steps()) training->set_grad_accum_steps(kDefaultGradAccumSteps);
  if (training->max_steps() == 0 && training->epochs() == 0) training->set_epochs(kDefaultEpochs);
  if (!training->has_lr()) training->set_lr(kDefaultLr);
  if (!training->has_beta1()) training->set_beta1(kDefaultBeta1);
  if (!training->has_beta2()) training->set_beta2(kDefaultBeta2);
  if (!training->has_eps()) training->set_eps(kDefaultEps);
  if (training->lr_schedule().empty()) training->set_lr_schedule(Name(kDefaultLrSchedule));
  if (!training->has_min_lr_ratio()) training->set_min_lr_ratio(kDefaultMinLrRatio);
  if (!training->has_log_every()) training->set_log_every(kDefaultLogEvery);
  if (!training->has_eval_every()) training->set_eval_every(kDefaultEvalEvery);
  if (training->recovery().empty()) training->set_recovery(Name(kDefaultRecovery));
}

void FillDdp(gradsync::v1::DdpSpec* ddp) {
  if (ddp->backend().empty()) ddp->set_backend(Name(kDefaultBackend));
  if (ddp->transport().empty()) ddp->set_transport(Name(kDefaultTransport));
  if (ddp->grad_compression().empty()) ddp->set_grad_compression(Name(kDefaultGradCompression));
  if (ddp->sharding().empty()) ddp->set_sharding(Name(kDefaultSharding));
  if (!ddp->has_bucket_cap_mb()) ddp->set_bucket_cap_mb(kDefaultBucketCapMb);
  if (!ddp->has_timeout_seconds()) ddp->set_timeout_seconds(kDefaultTimeoutSeconds);
}

}  // namespace

void FillDefaults(gradsync::v1::JobSpec* spec) {
  if (spec->name().empty()) spec->set_name(kDefaultName);
  if (spec->has_script()) {
    FillGang(spec->mutable_training());
    internal::FillScriptDefaults(spec);
    return;
  }
  FillModel(spec->mutable_model());
  FillData(spec->model().preset(), spec->mutable_data());
  FillTraining(spec->mutable_training());
  FillDdp(spec->mutable_ddp());
}

int MaxRestarts(const gradsync::v1::TrainingSpec& training) {
  return training.has_max_restarts() ? training.max_restarts() : kDefaultMaxRestarts;
}

}  // namespace gradsync::spec
