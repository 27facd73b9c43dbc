// FillDefaults, ValidateJobSpec, Normalize and the JSON round trip.
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::HasSubstr;

// The message of validating a defaulted spec after `edit`; the validation must fail.
template <typename Edit>
std::string ValidationError(Edit edit) {
  v1::JobSpec spec;
  FillDefaults(&spec);
  edit(&spec);
  absl::Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST(FillDefaultsTest, FillsAnEmptySpec) {
  v1::JobSpec spec;
  FillDefaults(&spec);
  EXPECT_EQ(spec.name(), "job");
  EXPECT_EQ(spec.model().preset(), "mlp");
  EXPECT_THAT(spec.model().mlp().hidden_dims(), ::testing::ElementsAre(128, 128));
  EXPECT_EQ(spec.model().mlp().activation(), "gelu");
  EXPECT_EQ(spec.model().device(), "auto");
  EXPECT_EQ(spec.model().precision(), "auto");
  EXPECT_FALSE(spec.model().has_transformer());
  ASSERT_TRUE(spec.data().has_synthetic());
  EXPECT_EQ(spec.data().synthetic().num_samples(), 8192);
  EXPECT_EQ(spec.data().synthetic().input_dim(), 32);
  EXPECT_EQ(spec.data().synthetic().num_classes(), 10);
  EXPECT_EQ(spec.data().synthetic().teacher_hidden(), 64);
  EXPECT_EQ(spec.data().synthetic().seed(), 1234u);
  EXPECT_EQ(spec.data().last_batch(), "partial");
  const v1::TrainingSpec& t = spec.training();
  EXPECT_EQ(t.world_size(), 1);
  EXPECT_EQ(t.micro_batch(), 32);
  EXPECT_EQ(t.grad_accum_steps(), 1);
  EXPECT_EQ(t.max_steps(), 0);
  EXPECT_EQ(t.epochs(), 1);
  EXPECT_EQ(t.seed(), 0u);
  EXPECT_DOUBLE_EQ(t.lr(), 1e-3);
  EXPECT_DOUBLE_EQ(t.weight_decay(), 0);
  EXPECT_DOUBLE_EQ(t.beta1(), 0.9);
  EXPECT_DOUBLE_EQ(t.beta2(), 0.95);
  EXPECT_DOUBLE_EQ(t.eps(), 1e-8);
  EXPECT_DOUBLE_EQ(t.grad_clip(), 0);
  EXPECT_EQ(t.warmup_steps(), 0);
  EXPECT_EQ(t.lr_schedule(), "cosine");
  EXPECT_DOUBLE_EQ(t.min_lr_ratio(), 0.1);
  EXPECT_EQ(t.log_every(), 10);
  EXPECT_EQ(spec.ddp().backend(), "auto");
  EXPECT_DOUBLE_EQ(spec.ddp().bucket_cap_mb(), 25);
  EXPECT_DOUBLE_EQ(spec.ddp().timeout_seconds(), 300);
  EXPECT_EQ(spec.ddp().grad_compression(), "none");
  EXPECT_EQ(spec.ddp().transport(), "auto");
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
}

TEST(FillDefaultsTest, KeepsValuesThatAreSet) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(
      "model: {mlp: {hiddenDims: [7]}}\n"
      "training: {maxSteps: 50, seed: 3, weightDecay: 0.1, beta1: 0.8}\n"
      "data: {synthetic: {numClasses: 3}}",
      "a.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  FillDefaults(&*spec);
  EXPECT_THAT(spec->model().mlp().hidden_dims(), ::testing::ElementsAre(7));
  EXPECT_EQ(spec->training().max_steps(), 50);
  EXPECT_EQ(spec->training().epochs(), 0) << "maxSteps alone must not gain an epoch limit";
  EXPECT_EQ(spec->training().seed(), 3u);
  EXPECT_DOUBLE_EQ(spec->training().weight_decay(), 0.1);
  EXPECT_DOUBLE_EQ(spec->training().beta1(), 0.8);
  EXPECT_EQ(spec->data().synthetic().num_classes(), 3);
  EXPECT_EQ(spec->data().synthetic().input_dim(), 32);
}

// Checkpoint cadence, retention, restarts and bucket sizes: NaN, infinities, huge and negative
// values are refused by name rather than reaching a timer or a loop bound.
TEST(ValidateJobSpecTest, CadenceRetentionRestartsAndBucketSizesAreBounded) {
  using S = v1::JobSpec;
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  const double kInf = std::numeric_limits<double>::infinity();
  for (double bad : {kNan, kInf, 1e308, -1.0}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ValidationError([bad](S* s) { s->mutable_checkpoint()->set_every_seconds(bad); }),
                HasSubstr("checkpoint.everySeconds: must be a finite number at least 0 and at most 604800"));
    EXPECT_THAT(ValidationError([bad](S* s) { s->mutable_ddp()->set_first_bucket_mb(bad); }),
                HasSubstr("ddp.firstBucketMb: must be a finite number at least 0 and at most 4096"));
  }
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_timeout_seconds(1e308); }),
              HasSubstr("ddp.timeoutSeconds: must be a finite number greater than 0 and at most 604800"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_checkpoint()->set_every_steps(-1); }),
              HasSubstr("checkpoint.everySteps: must be at least 0, got -1"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_checkpoint()->set_keep(-1); }),
              HasSubstr("checkpoint.keep: must be between 1 and 10000, got -1"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_checkpoint()->set_keep(0); }), HasSubstr("checkpoint.keep"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_max_restarts(-1); }),
              HasSubstr("training.maxRestarts: must be between 0 and 1000, got -1"));

  v1::JobSpec edge;
  FillDefaults(&edge);
  edge.mutable_checkpoint()->set_keep(1);
  edge.mutable_checkpoint()->set_every_seconds(0);
  edge.mutable_training()->set_max_restarts(0);
  edge.mutable_ddp()->set_first_bucket_mb(0);
  EXPECT_TRUE(ValidateJobSpec(edge).ok()) << ValidateJobSpec(edge);
}

// A job name that is not UTF-8 once made every later GetJob and ListJobs over gRPC fail.
TEST(ValidateJobSpecTest, EveryStringMustBeValidUtf8AndTheFieldIsNamed) {
  using S = v1::JobSpec;
  for (const char* bad : {"\xff", "ok\xc0\xaf", "\xed\xa0\x80", "cut\xe2\x82", "\xf4\x90\x80\x80", "\x80"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ValidationError([bad](S* s) { s->set_name(bad); }),
                HasSubstr("name: must be valid UTF-8, got bytes that are not"));
  }
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_checkpoint()->set_dir("/tmp/\xfe"); }),
              HasSubstr("checkpoint.dir: must be valid UTF-8"));
  v1::JobSpec text;
  text.mutable_model()->set_preset("gpt-tiny");
  text.mutable_data()->mutable_text()->add_paths("a.txt");
  text.mutable_data()->mutable_text()->add_paths("b\xff.txt");
  FillDefaults(&text);
  const absl::Status s = ValidateJobSpec(text);
  EXPECT_THAT(std::string(s.message()), HasSubstr("data.text.paths[1]: must be valid UTF-8")) << s;

  for (const char* good : {"caf\xc3\xa9", "\xe2\x82\xac 1", "\xf0\x9f\x9a\x80 launch", "\xf4\x8f\xbf\xbf"}) {
    v1::JobSpec spec;
    FillDefaults(&spec);
    spec.set_name(good);
    EXPECT_TRUE(ValidateJobSpec(spec).ok()) << good << ": " << ValidateJobSpec(spec);
  }
}

TEST(ValidateJobSpecTest, InitFromIsOnePathAndInitOptimizerNeedsIt) {
  using S = v1::JobSpec;
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_init_optimizer(true); }),
              HasSubstr("model.initOptimizer: needs model.initFrom"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_init_from("runs/*/weights.bin"); }),
              HasSubstr("model.initFrom: must name one file or directory, not a glob"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_init_from("a\nb"); }),
              HasSubstr("model.initFrom: must not contain control characters"));
}

TEST(ValidateJobSpecTest, ReportsThePathOfTheBadField) {
  using S = v1::JobSpec;
  EXPECT_EQ(ValidationError([](S* s) { s->mutable_training()->set_micro_batch(-1); }),
            "training.microBatch: must be between 1 and 1048576, got -1");
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_preset("cnn"); }),
              HasSubstr("model.preset: must be one of mlp, gpt-tiny, gpt2-124m, minimind-26m, got \"cnn\""));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_device("tpu"); }),
              HasSubstr("model.device: must be one of auto, cpu, cuda, got \"tpu\""));
  // The default preset is the mlp, which has no GPU implementation.
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_device("cuda"); }),
              HasSubstr("model.device: the mlp preset runs on the CPU only"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_precision("fp16"); }),
              HasSubstr("model.precision: must be one of auto, fp32, bf16, got \"fp16\""));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->set_precision("bf16"); }),
              HasSubstr("model.precision: the mlp preset runs on the CPU in fp32"));
  EXPECT_THAT(ValidationError([](S* s) {
                s->mutable_model()->set_device("cpu");
                s->mutable_model()->set_precision("bf16");
              }),
              HasSubstr("model.precision: bf16 runs on a GPU only"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_backend("nccl"); }),
              HasSubstr("ddp.backend: nccl reduces GPU memory and this model runs on the CPU"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->mutable_transformer()->set_layers(2); }),
              HasSubstr("model.transformer: must not be set with the mlp preset, got {\"layers\":2}"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->mutable_mlp()->set_hidden_dims(1, 0); }),
              HasSubstr("model.mlp.hiddenDims[1]: must be between 1 and 65536, got 0"));
  EXPECT_THAT(ValidationError([](S* s) {
                for (int i = 0; i < 20; ++i) s->mutable_model()->mutable_mlp()->add_hidden_dims(8);
              }),
              HasSubstr("model.mlp.hiddenDims: must have at most 16 layers"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_model()->mutable_mlp()->set_activation("tanh"); }),
              HasSubstr("model.mlp.activation"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_data()->mutable_synthetic()->set_num_classes(1); }),
              HasSubstr("data.synthetic.numClasses: must be between 2 and 65536, got 1"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_data()->set_last_batch("keep"); }), HasSubstr("data.lastBatch"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_world_size(5000); }),
              HasSubstr("training.worldSize: must be between 1 and 4096, got 5000"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_epochs(0); }),
              HasSubstr("training.epochs: must be positive when maxSteps is 0"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_max_steps(-5); }),
              HasSubstr("training.maxSteps: must be at least 0, got -5"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_lr(-1); }),
              HasSubstr("training.lr: must be a finite number greater than 0 and at most 10, got -1"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_lr(1.0 / 0.0); }), HasSubstr("training.lr"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_beta2(1); }),
              HasSubstr("training.beta2: must be a finite number at least 0 and less than 1, got 1"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_weight_decay(-0.1); }),
              HasSubstr("training.weightDecay"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_min_lr_ratio(2); }),
              HasSubstr("training.minLrRatio"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_lr_schedule("step"); }),
              HasSubstr("training.lrSchedule: must be one of cosine, constant, got \"step\""));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_log_every(-1); }), HasSubstr("training.logEvery"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_backend("mpi"); }),
              HasSubstr("ddp.backend: must be one of auto, gloo, nccl, got \"mpi\""));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_bucket_cap_mb(10000); }), HasSubstr("ddp.bucketCapMb"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_timeout_seconds(-1); }),
              HasSubstr("ddp.timeoutSeconds"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_grad_compression("fp16"); }),
              HasSubstr("ddp.gradCompression: must be one of none, bf16, got \"fp16\""));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_transport("rdma"); }),
              HasSubstr("ddp.transport: must be one of auto, tcp, got \"rdma\""));
  EXPECT_THAT(ValidationError([](S* s) { s->set_name(std::string(129, 'a')); }),
              HasSubstr("name: must be at most 128 characters"));
  EXPECT_THAT(ValidationError([](S* s) { s->set_name("a\nb"); }),
              HasSubstr("name: must not contain control characters, got \"a\\nb\""));
}

TEST(ValidateTest, ShardingModesValidateAndRefusedCombinationsNameTheField) {
  using S = v1::JobSpec;
  auto valid = [](const char* mode, const char* compression) {
    v1::JobSpec spec;
    FillDefaults(&spec);
    spec.mutable_ddp()->set_sharding(mode);
    spec.mutable_ddp()->set_grad_compression(compression);
    return ValidateJobSpec(spec);
  };
  for (const char* mode : {"none", "optimizer", "gradients", "full"}) EXPECT_TRUE(valid(mode, "none").ok()) << mode;
  EXPECT_TRUE(valid("optimizer", "bf16").ok());
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_ddp()->set_sharding("zero4"); }),
              HasSubstr("ddp.sharding: must be one of none, optimizer, gradients, full, got \"zero4\""));
  for (const char* mode : {"gradients", "full"}) {
    EXPECT_THAT(ValidationError([mode](S* s) {
                  s->mutable_ddp()->set_sharding(mode);
                  s->mutable_ddp()->set_grad_compression("bf16");
                }),
                HasSubstr("ddp.sharding: \"gradients\" and \"full\" reduce-scatter in fp32"))
        << mode;
  }
  EXPECT_THAT(ValidationError([](S* s) {
                s->mutable_ddp()->set_sharding("full");
                s->mutable_ddp()->add_ignore_params("layers.0.");
              }),
              HasSubstr("ddp.sharding: shards every parameter's optimizer state"));
}

TEST(ElasticSpecTest, WorkerRangeDefaultsToAFixedSizeAndFollowsWhatIsSet) {
  v1::JobSpec fixed;
  fixed.mutable_training()->set_world_size(3);
  FillDefaults(&fixed);
  EXPECT_EQ(fixed.training().min_workers(), 3);
  EXPECT_EQ(fixed.training().max_workers(), 3);

  v1::JobSpec elastic;
  elastic.mutable_training()->set_min_workers(1);
  elastic.mutable_training()->set_max_workers(4);
  FillDefaults(&elastic);
  EXPECT_EQ(elastic.training().world_size(), 4);
  EXPECT_TRUE(ValidateJobSpec(elastic).ok());

  v1::JobSpec only_min;
  only_min.mutable_training()->set_world_size(4);
  only_min.mutable_training()->set_min_workers(2);
  FillDefaults(&only_min);
  EXPECT_EQ(only_min.training().max_workers(), 4);
  EXPECT_TRUE(ValidateJobSpec(only_min).ok());
}

TEST(ElasticSpecTest, BadRangesNameTheField) {
  using S = v1::JobSpec;
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_min_workers(2); }),
              HasSubstr("training.minWorkers: must be at most maxWorkers (1), got 2"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_min_workers(-1); }),
              HasSubstr("training.minWorkers: must be between 1 and 4096, got -1"));
  EXPECT_THAT(ValidationError([](S* s) { s->mutable_training()->set_max_workers(3); }),
              HasSubstr("training.worldSize: must equal maxWorkers (3) when both are set, got 1"));
}

TEST(ValidateJobSpecTest, ReportsTheFirstProblemInSchemaOrder) {
  EXPECT_THAT(ValidationError([](v1::JobSpec* s) {
                s->mutable_ddp()->set_backend("mpi");
                s->mutable_training()->set_world_size(0);
                s->mutable_model()->set_preset("cnn");
              }),
              HasSubstr("model.preset"));
}

// A defaulted spec of `preset`, edited, then validated; the validation must fail.
template <typename Edit>
std::string TransformerError(const char* preset, Edit edit) {
  v1::JobSpec spec;
  spec.mutable_model()->set_preset(preset);
  FillDefaults(&spec);
  edit(spec.mutable_model()->mutable_transformer());
  absl::Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  return std::string(status.message());
}

TEST(TransformerSpecTest, PresetsFillEveryField) {
  struct Want {
    const char* preset;
    const char* flavour;
    int layers, heads, kv_heads, width, mlp_width, seq_len, vocab_size;
    double rope_theta;
  };
  for (const Want& w : {Want{"gpt-tiny", "gpt2", 4, 4, 4, 128, 512, 128, 256, 0.0},
                        Want{"gpt2-124m", "gpt2", 12, 12, 12, 768, 3072, 1024, 50257, 0.0},
                        Want{"minimind-26m", "llama", 8, 8, 2, 512, 1408, 512, 256, 1e6}}) {
    SCOPED_TRACE(w.preset);
    v1::JobSpec spec;
    spec.mutable_model()->set_preset(w.preset);
    spec.mutable_data()->mutable_shards()->add_paths("data/train_*.bin");
    FillDefaults(&spec);
    const v1::TransformerConfig& t = spec.model().transformer();
    EXPECT_EQ(t.flavour(), w.flavour);
    EXPECT_EQ(t.layers(), w.layers);
    EXPECT_EQ(t.heads(), w.heads);
    EXPECT_EQ(t.kv_heads(), w.kv_heads);
    EXPECT_EQ(t.width(), w.width);
    EXPECT_EQ(t.mlp_width(), w.mlp_width);
    EXPECT_EQ(t.seq_len(), w.seq_len);
    EXPECT_EQ(t.vocab_size(), w.vocab_size);
    EXPECT_DOUBLE_EQ(t.rope_theta(), w.rope_theta);
    EXPECT_DOUBLE_EQ(t.norm_eps(), 1e-5);
    EXPECT_EQ(spec.model().device(), "auto");
    EXPECT_FALSE(spec.model().has_mlp()) << "the mlp defaults are only for the mlp preset";
    EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  }
}

TEST(TransformerSpecTest, SetFieldsOverrideThePreset) {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec("model: {preset: gpt-tiny, device: cpu}\ndata: {text: {paths: [a.txt]}}", "a.yaml",
                   {"model.transformer.layers=6", "model.transformer.heads=8", "model.transformer.flavour=llama"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<v1::JobSpec> normal = Normalize(*spec);
  ASSERT_TRUE(normal.ok()) << normal.status();
  const v1::TransformerConfig& t = normal->model().transformer();
  EXPECT_EQ(t.layers(), 6);
  EXPECT_EQ(t.heads(), 8);
  EXPECT_EQ(t.kv_heads(), 8) << "the gpt2 presets' kvHeads follow heads";
  EXPECT_EQ(t.width(), 128);
  EXPECT_EQ(t.flavour(), "llama");
  EXPECT_DOUBLE_EQ(t.rope_theta(), 10000) << "llama's default base when the preset has none";
  EXPECT_EQ(normal->model().device(), "cpu");
  // Filling is idempotent, and the JSON form round-trips.
  v1::JobSpec again = *normal;
  FillDefaults(&again);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*normal, again));
  absl::StatusOr<v1::JobSpec> back = ParseJobSpec(ToJson(*normal), "printed");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*normal, *back));
}

TEST(TransformerSpecTest, ReportsThePathOfTheBadField) {
  using T = v1::TransformerConfig;
  EXPECT_EQ(TransformerError("minimind-26m", [](T* t) { t->set_kv_heads(3); }),
            "model.transformer.kvHeads: must divide heads (8), got 3");
  EXPECT_EQ(TransformerError("minimind-26m", [](T* t) { t->set_kv_heads(16); }),
            "model.transformer.kvHeads: must be between 1 and 8, got 16");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_width(130); }),
            "model.transformer.width: must be a multiple of heads (4), got 130");
  EXPECT_THAT(TransformerError("minimind-26m", [](T* t) { t->set_width(520); }),
              HasSubstr("model.transformer.width: must give an even head dimension"));
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_flavour("bert"); }),
            "model.transformer.flavour: must be one of gpt2, llama, got \"bert\"");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_layers(-1); }),
            "model.transformer.layers: must be between 1 and 1024, got -1");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_heads(0); }),
            "model.transformer.heads: must be between 1 and 1024, got 0");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_mlp_width(0); }),
            "model.transformer.mlpWidth: must be between 1 and 1048576, got 0");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_seq_len(65537); }),
            "model.transformer.seqLen: must be between 1 and 65536, got 65537");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_vocab_size(1); }),
            "model.transformer.vocabSize: must be between 2 and 1048576, got 1");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_vocab_size(2000000); }),
            "model.transformer.vocabSize: must be between 2 and 1048576, got 2000000");
  EXPECT_EQ(TransformerError("minimind-26m", [](T* t) { t->set_rope_theta(-1); }),
            "model.transformer.ropeTheta: must be a finite number greater than 0, got -1");
  EXPECT_THAT(TransformerError("gpt-tiny", [](T* t) { t->set_rope_theta(10000); }),
              HasSubstr("model.transformer.ropeTheta: is only used by the llama flavour"));
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_norm_eps(0); }),
            "model.transformer.normEps: must be a finite number greater than 0 and at most 1, "
            "got 0");
  EXPECT_EQ(TransformerError("gpt-tiny", [](T* t) { t->set_norm_eps(1.0 / 0.0); }),
            "model.transformer.normEps: must be a finite number greater than 0 and at most 1, "
            "got inf");
}

// A gpt-tiny spec with defaults filled and `data` (YAML) as its data section, validated.
absl::Status TransformerDataStatus(const std::string& data, const std::string& preset = "gpt-tiny") {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec(absl::StrCat("model: {preset: ", preset, "}\ndata: ", data), "a.yaml");
  if (!spec.ok()) return spec.status();
  return Normalize(*spec).status();
}

TEST(DataSpecTest, TransformersGetNoSyntheticDataByDefault) {
  v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  FillDefaults(&spec);
  EXPECT_EQ(spec.data().source_case(), v1::DataSpec::SOURCE_NOT_SET);
  EXPECT_EQ(spec.data().last_batch(), "partial");
  EXPECT_EQ(ValidateJobSpec(spec),
            absl::InvalidArgumentError("data: a transformer needs data.text or data.shards, got no source"));
}

TEST(DataSpecTest, TextAndShardsValidate) {
  EXPECT_TRUE(TransformerDataStatus("{text: {paths: [/usr/share/common-licenses/*-*]}}").ok());
  EXPECT_TRUE(TransformerDataStatus("{shards: {paths: [a.bin, 'b/train_*.bin']}}").ok());
  EXPECT_TRUE(TransformerDataStatus("{text: {paths: [a.txt]}}", "minimind-26m").ok());
  absl::StatusOr<v1::JobSpec> normal =
      Normalize(*ParseJobSpec("model: {preset: gpt-tiny}\ndata: {text: {paths: [a.txt]}}", "a.yaml"));
  ASSERT_TRUE(normal.ok()) << normal.status();
  EXPECT_FALSE(normal->data().has_synthetic());
  EXPECT_THAT(normal->data().text().paths(), ::testing::ElementsAre("a.txt"));
}

TEST(DataSpecTest, BadCombinationsNameTheField) {
  EXPECT_EQ(TransformerDataStatus("{synthetic: {numSamples: 10}}"),
            absl::InvalidArgumentError("data: a transformer needs data.text or data.shards, got data.synthetic"));
  EXPECT_EQ(TransformerDataStatus("{text: {paths: [a.txt]}}", "mlp"),
            absl::InvalidArgumentError("data: the mlp preset trains on data.synthetic, got data.text"));
  EXPECT_EQ(TransformerDataStatus("{shards: {paths: [a.bin]}}", "mlp"),
            absl::InvalidArgumentError("data: the mlp preset trains on data.synthetic, got data.shards"));
  EXPECT_EQ(TransformerDataStatus("{text: {paths: [a.txt]}}", "gpt2-124m"),
            absl::InvalidArgumentError("model.transformer.vocabSize: must be 256 with data.text (text is "
                                       "tokenised bytewise), got 50257"));
  EXPECT_TRUE(TransformerDataStatus("{shards: {paths: [a.bin]}}", "gpt2-124m").ok()) << "shards hold any vocabulary";
}

TEST(DataSpecTest, PathsMustBeNonEmptyStrings) {
  EXPECT_EQ(TransformerDataStatus("{text: {paths: []}}"),
            absl::InvalidArgumentError("data.text.paths: must list at least one file or glob, got []"));
  EXPECT_EQ(TransformerDataStatus("{text: {}}"),
            absl::InvalidArgumentError("data.text.paths: must list at least one file or glob, got []"));
  EXPECT_EQ(TransformerDataStatus("{shards: {paths: [a.bin, '']}}"),
            absl::InvalidArgumentError("data.shards.paths[1]: must not be empty, got \"\""));
  EXPECT_EQ(TransformerDataStatus("{shards: {paths: [\"a\\nb\"]}}"),
            absl::InvalidArgumentError("data.shards.paths[0]: must not contain control characters, got \"a\\nb\""));
  EXPECT_THAT(TransformerDataStatus("{text: {paths: a.txt}}").message(), HasSubstr("data.text.paths"));
}

TEST(TransformerSpecTest, MlpSectionIsRejectedWithATransformerPreset) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("model: {preset: gpt-tiny, mlp: {hiddenDims: [64]}}", "a.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(
      Normalize(*spec).status(),
      absl::InvalidArgumentError("model.mlp: must not be set with a transformer preset, got {\"hiddenDims\":[64]}"));
}

TEST(DeviceSpecTest, TransformersTakeEveryDeviceChoice) {
  for (const char* device : {"auto", "cuda"}) {
    for (const char* precision : {"auto", "fp32", "bf16"}) {
      for (const char* backend : {"auto", "gloo", "nccl"}) {
        const std::string yaml = absl::StrCat("model: {preset: gpt-tiny, device: ", device, ", precision: ", precision,
                                              "}\ndata: {text: {paths: [a.txt]}}\nddp: {backend: ", backend, "}");
        absl::StatusOr<v1::JobSpec> spec = Normalize(*ParseJobSpec(yaml, "a.yaml"));
        EXPECT_TRUE(spec.ok()) << yaml << ": " << spec.status();
      }
    }
  }
  absl::StatusOr<v1::JobSpec> cpu_nccl = Normalize(*ParseJobSpec(
      "model: {preset: gpt-tiny, device: cpu}\ndata: {text: {paths: [a.txt]}}\nddp: {backend: nccl}", "a"));
  EXPECT_EQ(cpu_nccl.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cpu_nccl.status().message()), HasSubstr("ddp.backend: nccl reduces GPU memory"));
}

TEST(NormalizeTest, FillsThenValidates) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("training: {worldSize: 4}", "a.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<v1::JobSpec> normal = Normalize(*spec);
  ASSERT_TRUE(normal.ok()) << normal.status();
  EXPECT_EQ(normal->training().world_size(), 4);
  EXPECT_EQ(normal->training().micro_batch(), 32);

  absl::StatusOr<v1::JobSpec> bad = Normalize(*ParseJobSpec("training: {worldSize: -2}", "a"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("training.worldSize"));
}

// A zero given explicitly is a value, not "unset": refused where zero is invalid, kept where it
// means something, the same from YAML, JSON (the REST body) and a proto built in code (gRPC).
TEST(NormalizeTest, ExplicitZerosAreJudgedNotDefaulted) {
  const struct {
    const char* text;
    const char* error;
  } refused[] = {
      {"training: {worldSize: 0}", "training.worldSize: must be between 1 and 4096, got 0"},
      {"{\"training\": {\"worldSize\": 0}}", "training.worldSize: must be between 1 and 4096, got 0"},
      {"training: {microBatch: 0}", "training.microBatch: must be between 1"},
      {"training: {lr: 0}", "training.lr"},
      {"training: {logEvery: 0}", "training.logEvery"},
      {"data: {synthetic: {numClasses: 0}}", "data.synthetic.numClasses"},
      {"ddp: {bucketCapMb: 0}", "ddp.bucketCapMb"},
  };
  for (const auto& c : refused) {
    absl::StatusOr<v1::JobSpec> parsed = ParseJobSpec(c.text, "a");
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status();
    absl::StatusOr<v1::JobSpec> normal = Normalize(*parsed);
    EXPECT_EQ(normal.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(normal.status().message()), HasSubstr(c.error)) << c.text;
  }

  v1::JobSpec built;
  built.mutable_training()->set_world_size(0);
  EXPECT_THAT(std::string(Normalize(built).status().message()), HasSubstr("training.worldSize"));

  absl::StatusOr<v1::JobSpec> kept =
      Normalize(*ParseJobSpec("training: {beta1: 0, minLrRatio: 0}\ndata: {synthetic: {seed: 0}}", "a"));
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->training().beta1(), 0);
  EXPECT_EQ(kept->training().min_lr_ratio(), 0);
  EXPECT_EQ(kept->data().synthetic().seed(), 0u);

  // Left out, they take their defaults; an empty override leaves them out.
  absl::StatusOr<v1::JobSpec> unset =
      Normalize(*ParseJobSpec("training: {worldSize: 0}", "a", {"training.worldSize="}));
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(unset->training().world_size(), 1);
}

TEST(ToJsonTest, RoundTripsThroughParse) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(
      "name: round\ntraining: {maxSteps: 20, seed: 18446744073709551615, lr: 2.5e-4}\n"
      "ddp: {backend: gloo}\ncheckpoint: {dir: ckpt}",
      "a.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<v1::JobSpec> normal = Normalize(*spec);
  ASSERT_TRUE(normal.ok()) << normal.status();
  for (bool pretty : {true, false}) {
    const std::string json = ToJson(*normal, pretty);
    EXPECT_THAT(json, HasSubstr("\"maxSteps\""));
    EXPECT_THAT(json, HasSubstr("\"hiddenDims\""));
    absl::StatusOr<v1::JobSpec> back = ParseJobSpec(json, "printed");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << json;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*normal, *back)) << json;
  }
}

}  // namespace
}  // namespace gradsync::spec
