// ParseJobSpec, overrides and LoadJobSpecFile.
#include "gradsync/spec/job_spec.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::HasSubstr;

constexpr char kYaml[] = R"(
name: tiny
model:
  preset: mlp
  mlp:
    hiddenDims: [64, 32]
    activation: relu
data:
  synthetic:
    numSamples: 1000
    inputDim: 16
    numClasses: 4
    seed: 7
  lastBatch: drop
training:
  worldSize: 2
  microBatch: 8
  maxSteps: 100
  lr: 0.01
  beta2: 0.999
  lrSchedule: constant
ddp:
  backend: gloo
  bucketCapMb: 1.5
)";

constexpr char kJson[] = R"({
  "name": "tiny",
  "model": {"preset": "mlp", "mlp": {"hiddenDims": [64, 32], "activation": "relu"}},
  "data": {"synthetic": {"numSamples": 1000, "inputDim": 16, "numClasses": 4, "seed": 7},
           "lastBatch": "drop"},
  "training": {"worldSize": 2, "microBatch": 8, "maxSteps": 100, "lr": 0.01, "beta2": 0.999,
               "lrSchedule": "constant"},
  "ddp": {"backend": "gloo", "bucketCapMb": 1.5}
})";

bool Equal(const v1::JobSpec& a, const v1::JobSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// The error message of parsing `text`, which must fail with INVALID_ARGUMENT.
std::string ParseError(const std::string& text, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text, "job.yaml", overrides);
  EXPECT_FALSE(spec.ok()) << "parsed: " << text;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

TEST(ParseJobSpecTest, YamlAndJsonGiveTheSameProto) {
  absl::StatusOr<v1::JobSpec> yaml = ParseJobSpec(kYaml, "a.yaml");
  absl::StatusOr<v1::JobSpec> json = ParseJobSpec(kJson, "a.json");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(Equal(*yaml, *json)) << yaml->DebugString() << "\nvs\n" << json->DebugString();
}

TEST(ParseJobSpecTest, ReadsNestedAndRepeatedFields) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(kYaml, "a.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "tiny");
  ASSERT_EQ(spec->model().mlp().hidden_dims_size(), 2);
  EXPECT_EQ(spec->model().mlp().hidden_dims(0), 64);
  EXPECT_EQ(spec->model().mlp().hidden_dims(1), 32);
  EXPECT_EQ(spec->data().synthetic().num_samples(), 1000);
  EXPECT_EQ(spec->data().synthetic().seed(), 7u);
  EXPECT_EQ(spec->training().world_size(), 2);
  EXPECT_DOUBLE_EQ(spec->training().lr(), 0.01);
  EXPECT_DOUBLE_EQ(spec->ddp().bucket_cap_mb(), 1.5);
  EXPECT_EQ(spec->ddp().backend(), "gloo");
}

TEST(ParseJobSpecTest, AcceptsProtoFieldNames) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("training: {world_size: 3, grad_accum_steps: 2}", "a.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->training().world_size(), 3);
  EXPECT_EQ(spec->training().grad_accum_steps(), 2);
}

TEST(ParseJobSpecTest, NullLeavesFieldsUnset) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("name: ~\ntraining:\nmodel: {preset: }", "a");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "");
  EXPECT_FALSE(spec->has_training());
  EXPECT_EQ(spec->model().preset(), "");
}

TEST(ParseJobSpecTest, IntegersAcceptQuotedDigitsAndDoublesAcceptIntegers) {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec("data: {synthetic: {numSamples: \"9000\"}}\ntraining: {lr: 1, eps: 1e-6}", "a");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->data().synthetic().num_samples(), 9000);
  EXPECT_DOUBLE_EQ(spec->training().lr(), 1.0);
  EXPECT_DOUBLE_EQ(spec->training().eps(), 1e-6);
}

TEST(OverrideTest, SetsScalars) {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec(kYaml, "a.yaml", {"name=foo", "training.lr=3e-4", "data.synthetic.seed=9"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "foo");
  EXPECT_DOUBLE_EQ(spec->training().lr(), 3e-4);
  EXPECT_EQ(spec->data().synthetic().seed(), 9u);
}

TEST(OverrideTest, SetsLists) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(kYaml, "a.yaml", {"model.mlp.hiddenDims=[8, 8, 8]"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->model().mlp().hidden_dims_size(), 3);
  EXPECT_EQ(spec->model().mlp().hidden_dims(2), 8);
}

TEST(OverrideTest, CreatesMissingMaps) {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec("name: x", "a.yaml", {"ddp.timeoutSeconds=60", "data.synthetic.inputDim=5"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_DOUBLE_EQ(spec->ddp().timeout_seconds(), 60);
  EXPECT_EQ(spec->data().synthetic().input_dim(), 5);
  EXPECT_EQ(spec->name(), "x");
}

TEST(OverrideTest, ReplacesFileValuesWhateverTheSpelling) {
  absl::StatusOr<v1::JobSpec> spec =
      ParseJobSpec("training: {world_size: 2, microBatch: 4}", "a.yaml",
                   {"training.worldSize=8", "training.micro_batch=16", "training.worldSize=4"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->training().world_size(), 4);
  EXPECT_EQ(spec->training().micro_batch(), 16);
}

TEST(OverrideTest, EmptyValueClearsTheField) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(kYaml, "a.yaml", {"training.worldSize="});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->training().world_size(), 0);
}

TEST(OverrideTest, ValuesAreTypeChecked) {
  EXPECT_THAT(ParseError(kYaml, {"training.worldSize=two"}),
              HasSubstr("training.worldSize: expected an integer, got \"two\""));
}

TEST(OverrideTest, MalformedOverridesNameTheOverride) {
  EXPECT_THAT(ParseError(kYaml, {"training.worldSize"}),
              HasSubstr("override \"training.worldSize\": expected path=value"));
  EXPECT_THAT(ParseError(kYaml, {"=3"}), HasSubstr("override \"=3\": empty path"));
  EXPECT_THAT(ParseError(kYaml, {"training..lr=3"}), HasSubstr("override \"training..lr=3\""));
  EXPECT_THAT(ParseError(kYaml, {"name.first=a"}), HasSubstr("name is not a map"));
  EXPECT_THAT(ParseError(kYaml, {"model.mlp.hiddenDims=[1,"}), HasSubstr("override \"model.mlp.hiddenDims=[1,\""));
}

TEST(OverrideTest, UnknownPathIsAnUnknownField) {
  EXPECT_THAT(ParseError(kYaml, {"training.wordSize=2"}), HasSubstr("job.yaml: training.wordSize: unknown field"));
}

TEST(ParseErrorTest, UnknownFieldNamesTheFullPathAndSuggests) {
  const std::string message = ParseError("training:\n  wordSize: 2\n");
  EXPECT_THAT(message, HasSubstr("job.yaml: training.wordSize: unknown field"));
  EXPECT_THAT(message, HasSubstr("did you mean worldSize?"));
  EXPECT_THAT(ParseError("model: {mlp: {hiddenDimz: [1]}}"), HasSubstr("model.mlp.hiddenDimz: unknown field"));
  EXPECT_THAT(ParseError("colour: blue"), HasSubstr("job.yaml: colour: unknown field"));
}

TEST(ParseErrorTest, WrongTypes) {
  EXPECT_THAT(ParseError("training: {worldSize: two}"),
              HasSubstr("job.yaml: training.worldSize: expected an integer, got \"two\""));
  EXPECT_THAT(ParseError("training: {worldSize: 2.5}"),
              HasSubstr("training.worldSize: expected an integer, got \"2.5\""));
  EXPECT_THAT(ParseError("training: {maxSteps: [1]}"),
              HasSubstr("training.maxSteps: expected an integer, got a sequence"));
  EXPECT_THAT(ParseError("training: {lr: fast}"), HasSubstr("training.lr: expected a number, got \"fast\""));
  EXPECT_THAT(ParseError("training: {lr: 0x10}"), HasSubstr("training.lr: expected a number"));
  EXPECT_THAT(ParseError("name: {first: a}"), HasSubstr("name: expected a string, got a map"));
  EXPECT_THAT(ParseError("model: {mlp: {hiddenDims: 64}}"),
              HasSubstr("model.mlp.hiddenDims: expected a sequence, got \"64\""));
  EXPECT_THAT(ParseError("model: {mlp: {hiddenDims: [64, x]}}"),
              HasSubstr("model.mlp.hiddenDims[1]: expected an integer, got \"x\""));
  EXPECT_THAT(ParseError("training: 5"), HasSubstr("training: expected a map of fields, got \"5\""));
  EXPECT_THAT(ParseError("data: [synthetic]"), HasSubstr("data: expected a map of fields, got a sequence"));
}

TEST(ParseErrorTest, IntegersOutOfRange) {
  EXPECT_THAT(ParseError("training: {worldSize: 3000000000}"),
              HasSubstr("training.worldSize: expected an integer between -2147483648 and "
                        "2147483647, got \"3000000000\""));
  EXPECT_THAT(ParseError("training: {maxSteps: 99999999999999999999}"),
              HasSubstr("training.maxSteps: expected an integer between"));
  EXPECT_THAT(ParseError("data: {synthetic: {seed: -1}}"),
              HasSubstr("data.synthetic.seed: expected a non-negative integer, got \"-1\""));
}

TEST(ParseErrorTest, MalformedYamlGivesTheLine) {
  const std::string message = ParseError("name: a\ntraining:\n  worldSize: [1, 2\n");
  EXPECT_THAT(message, HasSubstr("job.yaml: line "));
  EXPECT_THAT(message, HasSubstr("column"));
  EXPECT_THAT(ParseError("{\"name\": \"a\",\n \"training\": {\"worldSize\": 2]}"),
              HasSubstr("job.yaml: line 2, column"));
}

TEST(ParseErrorTest, EmptyText) {
  EXPECT_EQ(ParseError(""), "job.yaml: empty job spec");
  EXPECT_EQ(ParseError("  \n# only a comment\n"), "job.yaml: empty job spec");
}

TEST(ParseErrorTest, TopLevelMustBeAMap) {
  EXPECT_THAT(ParseError("- a\n- b\n"), HasSubstr("job.yaml: the job spec must be a map of fields"));
  EXPECT_THAT(ParseError("hello"), HasSubstr("job.yaml: the job spec must be a map of fields"));
}

TEST(ParseErrorTest, FieldSetTwice) {
  EXPECT_THAT(ParseError("training: {worldSize: 2, world_size: 3}"),
              HasSubstr("training.worldSize: set twice, as worldSize and as world_size"));
  EXPECT_EQ(ParseError("name: a\nname: b\n"), "job.yaml: name: set twice");
}

TEST(ParseErrorTest, OneDocumentOnly) {
  EXPECT_EQ(ParseError("name: a\n---\nname: b\n"),
            "job.yaml: expected one YAML document, found a second at line 2, column 1");
  // An empty document after the spec is no second spec, as for YAML::LoadAll.
  absl::StatusOr<v1::JobSpec> trailing = ParseJobSpec("name: a\n---\n", "job.yaml");
  ASSERT_TRUE(trailing.ok()) << trailing.status();
  EXPECT_EQ(trailing->name(), "a");
}

// On this text yaml-cpp's parser, after a spec and a stray scalar, returns empty documents at the
// `?` forever: YAML::LoadAll never ends and runs out of memory. The parse must end with an error:
// libyaml's, which refuses the text at its first flaw, before yaml-cpp sees it.
TEST(ParseErrorTest, TextThatKeepsYamlCppsParserInPlaceEnds) {
  const std::string text = "{\n  \"namee80\",, \"beta1\": 0.999,\n       {\"nt,\"}}onstant\"},\n? .n\n  \"naddpmnLrR\"";
  EXPECT_EQ(ParseError(text), "job.yaml: line 2, column 13: while parsing a flow node: did not find expected node content");
}

TEST(LoadJobSpecFileTest, ReadsAFileAndReportsMissingOnes) {
  const std::string path = testing::TempDir() + "/spec_test_job.yaml";
  std::ofstream(path) << kYaml;
  absl::StatusOr<v1::JobSpec> spec = LoadJobSpecFile(path, {"name=fromfile"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "fromfile");
  std::remove(path.c_str());

  absl::StatusOr<v1::JobSpec> missing = LoadJobSpecFile(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("cannot read " + path + ": "));
}

TEST(LoadJobSpecFileTest, ErrorsNameTheFile) {
  const std::string path = testing::TempDir() + "/spec_test_bad.yaml";
  std::ofstream(path) << "training: {worldSize: two}\n";
  absl::StatusOr<v1::JobSpec> spec = LoadJobSpecFile(path);
  std::remove(path.c_str());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr(path + ": training.worldSize"));
}

}  // namespace
}  // namespace gradsync::spec
