// The rules a job spec with its defaults filled must satisfy. Limits are generous sanity bounds
// that catch typos (an extra zero, a negative sign) before a job reaches the workers.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checker.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/nn/presets.h"
#include "gradsync/spec/choices.h"
#include "gradsync/spec/job_paths.h"
#include "gradsync/spec/job_spec.h"
#include "script_spec.h"
#include "utf8.h"

namespace gradsync::spec {
namespace {

using internal::Bound;
using internal::Checker;

constexpr size_t kMaxNameLength = 128;
constexpr int kMaxLayers = 16;
constexpr int64_t kMaxWidth = 65536;
constexpr int64_t kMaxSamples = 1'000'000'000;
constexpr int64_t kMaxWorldSize = 4096;
constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;
constexpr int64_t kMaxGradAccumSteps = int64_t{1} << 16;
constexpr double kMaxLr = 10;
constexpr double kMaxBucketCapMb = 4096;
constexpr int64_t kMaxRestarts = 1000;
constexpr int64_t kMaxKeep = 10000;
// A week: longer than any collective or checkpoint interval worth waiting for.
constexpr double kMaxSeconds = 7 * 24 * 3600;
// Text is tokenised bytewise (gradsync/data/token_shard.h), so its models have 256 tokens.
constexpr int kByteVocab = 256;

constexpr Bound kZeroInclusive{0, true};
constexpr Bound kZeroExclusive{0, false};
constexpr Bound kOneInclusive{1, true};
constexpr Bound kOneExclusive{1, false};

// Control characters in a name garble logs and terminals; UTF-8 bytes are allowed.
bool IsPrintable(const std::string& text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return false;
  }
  return true;
}

void CheckName(const std::string& name, Checker* check) {
  check->Require(!name.empty(), "name", "must not be empty", "\"\"");
  check->Require(name.size() <= kMaxNameLength, "name", absl::StrCat("must be at most ", kMaxNameLength, " characters"),
                 absl::StrCat(name.size(), " characters"));
  check->Require(IsPrintable(name), "name", "must not contain control characters", internal::Quote(name));
}

// The parsed choice, or `fallback` after recording the parse error (later rules then do nothing).
template <typename E>
E Checked(const absl::StatusOr<E>& parsed, E fallback, Checker* check) {
  check->Merge(parsed.status());
  return parsed.value_or(fallback);
}

// A message as compact JSON, for "got" in messages about sections that must stay unset.
std::string Json(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

// Returns model.device as parsed (kAuto when it is not a device: the error is recorded).
Device CheckModel(const gradsync::v1::ModelSpec& model, Checker* check) {
  const std::vector<std::string>& presets = nn::ModelPresetNames();
  check->Require(std::find(presets.begin(), presets.end(), model.preset()) != presets.end(), "model.preset",
                 absl::StrCat("must be one of ", absl::StrJoin(presets, ", ")), internal::Quote(model.preset()));
  const Device device = Checked(ParseDevice(model.device()), Device::kAuto, check);
  const Precision precision = Checked(ParsePrecision(model.precision()), Precision::kAuto, check);
  check->Require(!(device == Device::kCpu && precision == Precision::kBf16), "model.precision",
                 "bf16 runs on a GPU only; with model.device \"cpu\" use \"fp32\" or \"auto\"", "\"bf16\"");
  if (nn::IsTransformerPreset(model.preset())) {
    check->Require(model.mlp().ByteSizeLong() == 0, "model.mlp", "must not be set with a transformer preset",
                   Json(model.mlp()));
    check->Merge(nn::ValidateTransformerConfig(model.transformer()));
    return device;
  }
  check->Require(model.transformer().ByteSizeLong() == 0, "model.transformer", "must not be set with the mlp preset",
                 Json(model.transformer()));
  check->Require(device != Device::kCuda, "model.device",
                 "the mlp preset runs on the CPU only; use \"cpu\" or \"auto\"", "\"cuda\"");
  check->Require(precision != Precision::kBf16, "model.precision",
                 "the mlp preset runs on the CPU in fp32; use \"fp32\" or \"auto\"", "\"bf16\"");
  const gradsync::v1::MlpConfig& mlp = model.mlp();
  check->Require(mlp.hidden_dims_size() <= kMaxLayers, "model.mlp.hiddenDims",
                 absl::StrCat("must have at most ", kMaxLayers, " layers"),
                 absl::StrCat(mlp.hidden_dims_size(), " layers"));
  for (int i = 0; i < mlp.hidden_dims_size(); ++i) {
    check->Between(absl::StrCat("model.mlp.hiddenDims[", i, "]"), mlp.hidden_dims(i), 1, kMaxWidth);
  }
  check->OneOf("model.mlp.activation", mlp.activation(), {"gelu", "relu"});
  return device;
}

// model.initFrom names one file or directory; where it lies is checked against the coordinator's
// roots at submission (ConfineInitFrom), whether it exists by the workers that read it.
void CheckInitFrom(const gradsync::v1::ModelSpec& model, Checker* check) {
  const std::string& from = model.init_from();
  check->Require(IsPrintable(from), "model.initFrom", "must not contain control characters", internal::Quote(from));
  check->Require(from.find_first_of("*?[\\") == std::string::npos, "model.initFrom",
                 "must name one file or directory, not a glob", internal::Quote(from));
  check->Require(!model.init_optimizer() || !from.empty(), "model.initOptimizer",
                 "needs model.initFrom, the checkpoint directory whose optimizer state it restores", "true");
}

// The paths of a text or shards source: at least one, none empty. Whether the files exist is
// the worker's question (TokenDataset::Load names a missing file): the spec may be written on a
// machine that does not hold the data.
void CheckPaths(const std::string& field, const google::protobuf::RepeatedPtrField<std::string>& paths,
                Checker* check) {
  check->Require(!paths.empty(), field, "must list at least one file or glob", "[]");
  for (int i = 0; i < paths.size(); ++i) {
    const std::string path = absl::StrCat(field, "[", i, "]");
    check->Require(!paths[i].empty(), path, "must not be empty", "\"\"");
    check->Require(IsPrintable(paths[i]), path, "must not contain control characters", internal::Quote(paths[i]));
  }
}

// Validation shards hold tokens, so only a transformer has any; naming them and turning
// validation off at once is a contradiction, not a choice.
void CheckValidation(bool transformer, const gradsync::v1::ValidationData& validation, Checker* check) {
  if (validation.paths().empty()) return;
  check->Require(transformer, "data.validation", "validation shards hold tokens: they need a transformer preset",
                 "data.validation.paths with the mlp preset");
  check->Require(!validation.disabled(), "data.validation.disabled",
                 "must be false when data.validation.paths names shards", "true");
  CheckPaths("data.validation.paths", validation.paths(), check);
}

void CheckData(const gradsync::v1::ModelSpec& model, const gradsync::v1::DataSpec& data, Checker* check) {
  const bool transformer = nn::IsTransformerPreset(model.preset());
  if (transformer) {
    check->Require(data.has_text() || data.has_shards(), "data", "a transformer needs data.text or data.shards",
                   data.has_synthetic() ? "data.synthetic" : "no source");
  } else {
    check->Require(data.has_synthetic(), "data", "the mlp preset trains on data.synthetic",
                   data.has_text()     ? "data.text"
                   : data.has_shards() ? "data.shards"
                                       : "no source");
  }
  if (data.has_synthetic()) {
    const gradsync::v1::SyntheticData& synthetic = data.synthetic();
    check->Between("data.synthetic.numSamples", synthetic.num_samples(), 1, kMaxSamples);
    check->Between("data.synthetic.inputDim", synthetic.input_dim(), 1, kMaxWidth);
    check->Between("data.synthetic.numClasses", synthetic.num_classes(), 2, kMaxWidth);
    check->Between("data.synthetic.teacherHidden", synthetic.teacher_hidden(), 1, kMaxWidth);
  }
  if (data.has_text()) {
    CheckPaths("data.text.paths", data.text().paths(), check);
    check->Require(model.transformer().vocab_size() == kByteVocab, "model.transformer.vocabSize",
                   absl::StrCat("must be ", kByteVocab, " with data.text (text is tokenised bytewise)"),
                   absl::StrCat(model.transformer().vocab_size()));
  }
  if (data.has_shards()) CheckPaths("data.shards.paths", data.shards().paths(), check);
  check->Merge(ParseLastBatch(data.last_batch()).status());
  CheckValidation(transformer, data.validation(), check);
}

// The gang and its restarts: every job has them, a script job's included.
void CheckGang(const gradsync::v1::TrainingSpec& training, Checker* check) {
  check->Between("training.worldSize", training.world_size(), 1, kMaxWorldSize);
  check->Between("training.maxWorkers", training.max_workers(), 1, kMaxWorldSize);
  check->Between("training.minWorkers", training.min_workers(), 1, kMaxWorldSize);
  check->Require(training.min_workers() <= training.max_workers(), "training.minWorkers",
                 absl::StrCat("must be at most maxWorkers (", training.max_workers(), ")"),
                 absl::StrCat(training.min_workers()));
  check->Require(training.world_size() == training.max_workers(), "training.worldSize",
                 absl::StrCat("must equal maxWorkers (", training.max_workers(), ") when both are set"),
                 absl::StrCat(training.world_size()));
  if (training.has_max_restarts()) check->Between("training.maxRestarts", training.max_restarts(), 0, kMaxRestarts);
}

void CheckTraining(const gradsync::v1::TrainingSpec& training, Checker* check) {
  CheckGang(training, check);
  check->Between("training.microBatch", training.micro_batch(), 1, kMaxMicroBatch);
  check->Between("training.gradAccumSteps", training.grad_accum_steps(), 1, kMaxGradAccumSteps);
  check->AtLeast("training.maxSteps", training.max_steps(), 0);
  check->AtLeast("training.epochs", training.epochs(), 0);
  check->Require(training.max_steps() > 0 || training.epochs() > 0, "training.epochs",
                 "must be positive when maxSteps is 0", "0");
  const Bound max_lr{kMaxLr, true};
  check->Number("training.lr", training.lr(), kZeroExclusive, &max_lr);
  check->Number("training.weightDecay", training.weight_decay(), kZeroInclusive);
  check->Number("training.beta1", training.beta1(), kZeroInclusive, &kOneExclusive);
  check->Number("training.beta2", training.beta2(), kZeroInclusive, &kOneExclusive);
  check->Number("training.eps", training.eps(), kZeroExclusive);
  check->Number("training.gradClip", training.grad_clip(), kZeroInclusive);
  check->AtLeast("training.warmupSteps", training.warmup_steps(), 0);
  check->Merge(ParseLrSchedule(training.lr_schedule()).status());
  check->Merge(ParseRecovery(training.recovery()).status());
  check->Number("training.minLrRatio", training.min_lr_ratio(), kZeroInclusive, &kOneInclusive);
  check->AtLeast("training.logEvery", training.log_every(), 1);
  check->AtLeast("training.evalEvery", training.eval_every(), 0);
}

void CheckSharding(const gradsync::v1::DdpSpec& ddp, Checker* check) {
  const Sharding sharding = Checked(ParseSharding(ddp.sharding()), Sharding::kNone, check);
  if (sharding == Sharding::kNone) return;
  const std::string got = internal::Quote(ddp.sharding());
  // Ignored parameters keep each rank's own values; a shard's owner would overwrite them.
  check->Require(ddp.ignore_params().empty(), "ddp.sharding",
                 "shards every parameter's optimizer state, and ddp.ignoreParams keeps some parameters "
                 "rank-local; use one or the other",
                 got);
  const bool bf16 =
      ParseGradCompression(ddp.grad_compression()).value_or(GradCompression::kNone) == GradCompression::kBf16;
  check->Require((sharding != Sharding::kGradients && sharding != Sharding::kFull) || !bf16, "ddp.sharding",
                 "\"gradients\" and \"full\" reduce-scatter in fp32; ddp.gradCompression \"bf16\" goes with "
                 "\"none\" or \"optimizer\"",
                 got);
}

void CheckDdp(const gradsync::v1::ModelSpec& model, Device device, const gradsync::v1::DdpSpec& ddp, Checker* check) {
  const Backend backend = Checked(ParseBackend(ddp.backend()), Backend::kAuto, check);
  // NCCL reduces GPU memory: it needs every rank's model on a GPU of its own.
  const bool cpu_only = device == Device::kCpu || !nn::IsTransformerPreset(model.preset());
  check->Require(!(backend == Backend::kNccl && cpu_only), "ddp.backend",
                 "nccl reduces GPU memory and this model runs on the CPU (model.device \"cpu\" or the mlp "
                 "preset); use \"gloo\" or \"auto\"",
                 "\"nccl\"");
  const Bound max_bucket{kMaxBucketCapMb, true};
  check->Number("ddp.bucketCapMb", ddp.bucket_cap_mb(), kZeroExclusive, &max_bucket);
  check->Number("ddp.firstBucketMb", ddp.first_bucket_mb(), kZeroInclusive, &max_bucket);
  const Bound max_seconds{kMaxSeconds, true};
  check->Number("ddp.timeoutSeconds", ddp.timeout_seconds(), kZeroExclusive, &max_seconds);
  check->Merge(ParseGradCompression(ddp.grad_compression()).status());
  check->Merge(ParseTransport(ddp.transport()).status());
  CheckSharding(ddp, check);
}

void CheckCheckpoint(const gradsync::v1::CheckpointSpec& checkpoint, Checker* check) {
  check->Require(IsPrintable(checkpoint.dir()), "checkpoint.dir", "must not contain control characters",
                 internal::Quote(checkpoint.dir()));
  // A path here could name another job's directory or any file the coordinator can write.
  check->Require(IsCheckpointSubdir(checkpoint.dir()), "checkpoint.dir",
                 "must be the name of a subdirectory of the job's own directory (at most 64 letters, digits, "
                 "'.', '_' or '-', not starting with '.'), not a path; to start from another job's weights or "
                 "checkpoint, name it in model.initFrom",
                 internal::Quote(checkpoint.dir()));
  check->AtLeast("checkpoint.everySteps", checkpoint.every_steps(), 0);
  const Bound max_seconds{kMaxSeconds, true};
  check->Number("checkpoint.everySeconds", checkpoint.every_seconds(), kZeroInclusive, &max_seconds);
  if (checkpoint.has_keep()) check->Between("checkpoint.keep", checkpoint.keep(), 1, kMaxKeep);
}

}  // namespace

absl::Status ValidateJobSpec(const gradsync::v1::JobSpec& spec) {
  Checker check;
  // Before anything quotes a string back: invalid UTF-8 cannot be printed in JSON or sent over gRPC.
  if (const std::optional<internal::BadString> bad = internal::FirstBadString(spec)) {
    check.Require(false, bad->path, bad->problem, bad->got);
  }
  CheckName(spec.name(), &check);
  if (spec.has_script()) {
    CheckGang(spec.training(), &check);
    internal::CheckScriptJob(spec, &check);
    CheckCheckpoint(spec.checkpoint(), &check);
    return check.status();
  }
  const Device device = CheckModel(spec.model(), &check);
  CheckInitFrom(spec.model(), &check);
  CheckData(spec.model(), spec.data(), &check);
  CheckTraining(spec.training(), &check);
  CheckDdp(spec.model(), device, spec.ddp(), &check);
  CheckCheckpoint(spec.checkpoint(), &check);
  return check.status();
}

}  // namespace gradsync::spec
