// The bounds on spec text before yaml-cpp parses it (size, bytes, nesting, anchors), JSON's
// surrogate-pair escapes, and the length of each string.
#include <pthread.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::spec {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string ParseError(const std::string& text, const std::vector<std::string>& overrides = {}) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text, "job.json", overrides);
  EXPECT_FALSE(spec.ok()) << "parsed: " << text.substr(0, 80);
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  return std::string(spec.status().message());
}

std::string Repeat(const std::string& piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// A JSON list nested `depth` deep, as the value of `name`.
std::string NestedJson(int depth) { return "{\"name\": " + Repeat("[", depth) + Repeat("]", depth) + "}"; }

// ParseJobSpec on a thread with a 128 KiB stack: yaml-cpp's parser recurses per nested level and
// overflows such a stack at about 300 levels, below its own guard of 500.
absl::StatusOr<v1::JobSpec> ParseOnSmallStack(const std::string& text) {
  struct Call {
    const std::string* text;
    absl::StatusOr<v1::JobSpec> result;
  } call{&text, absl::UnknownError("not run")};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 128 * 1024);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    auto* c = static_cast<Call*>(arg);
    c->result = ParseJobSpec(*c->text, "request body");
    return nullptr;
  };
  EXPECT_EQ(pthread_create(&thread, &attr, run, &call), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return call.result;
}

TEST(SpecTextTest, JsonSurrogatePairIsTheCharacterItEncodes) {
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(R"({"name": "launch \ud83d\ude80 now"})", "request body");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "launch \xF0\x9F\x9A\x80 now");
  // Upper-case hex, YAML's double quotes, and a pair in a list of paths.
  spec = ParseJobSpec("name: \"\\uD83D\\uDE80\"\ndata: {text: {paths: [\"a\\ud83d\\ude00.txt\"]}}\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "\xF0\x9F\x9A\x80");
  EXPECT_EQ(spec->data().text().paths(0), "a\xF0\x9F\x98\x80.txt");
  EXPECT_TRUE(Normalize(*ParseJobSpec(R"({"name": "\ud83d\ude80"})", "request body")).ok());
}

TEST(SpecTextTest, OtherBackslashesAreLeftAlone) {
  // Single quotes and plain scalars have no escapes: the text stays as written.
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("name: 'a\\ud83d'\ndata: {text: {paths: [b\\ud83d]}}\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "a\\ud83d");
  EXPECT_EQ(spec->data().text().paths(0), "b\\ud83d");
  // An escaped backslash before "u" is not an escape of its own.
  spec = ParseJobSpec(R"({"name": "c:\\ud83d"})", "request body");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "c:\\ud83d");
}

TEST(SpecTextTest, LoneSurrogateIsRefusedWithItsPlace) {
  EXPECT_THAT(ParseError(R"({"name": "a\ud83d"})"),
              AllOf(HasSubstr("job.json: line 1, column 12: \\ud83d is half of a UTF-16 surrogate pair"),
                    HasSubstr("must be followed at once by a low one")));
  EXPECT_THAT(ParseError("{\n  \"name\": \"\\ude80\"}"), HasSubstr("line 2, column 12: \\ude80 is half"));
  EXPECT_THAT(ParseError(R"({"name": "\ud83d\u0041"})"), HasSubstr("\\ud83d is half"));
  EXPECT_THAT(ParseError(R"({"name": "\ud83d\ud83d"})"), HasSubstr("\\ud83d is half"));
}

TEST(SpecTextTest, NestingDeeperThanTheLimitIsRefusedByTheScan) {
  EXPECT_THAT(ParseError(NestedJson(64)),
              HasSubstr("job.json: line 1, column 73: maps and lists nest deeper than the limit of 64 levels"));
  // Within the limit yaml-cpp parses it, and the converter names the problem.
  EXPECT_THAT(ParseError(NestedJson(63)), HasSubstr("name: expected a string, got a sequence"));
  EXPECT_THAT(ParseError("name:\n" + Repeat("- ", 100) + "x\n"), HasSubstr("deeper than the limit of 64"));
  std::string indented;
  for (int i = 0; i < 80; ++i) indented += std::string(i, ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_THAT(ParseError(indented), HasSubstr("line 65, column 65: maps and lists nest deeper"));
  EXPECT_THAT(ParseError("{}", {"name=" + Repeat("{a: ", 70)}),
              AllOf(HasSubstr("override \"name="), HasSubstr("deeper than the limit of 64")));
  EXPECT_THAT(ParseError("{}", {"name=" + Repeat("[", 70)}), HasSubstr("value: line 1, column 65: maps and lists"));
}

TEST(SpecTextTest, DeepTextIsRefusedBeforeYamlCppRecursesOnASmallStack) {
  // Before the scan this overflowed the thread's stack (a crash, not an error).
  absl::StatusOr<v1::JobSpec> deep = ParseOnSmallStack(NestedJson(400));
  EXPECT_THAT(deep.status().message(), HasSubstr("deeper than the limit of 64")) << deep.status();
  deep = ParseOnSmallStack("name:\n" + Repeat("- ", 400) + "x\n");
  EXPECT_THAT(deep.status().message(), HasSubstr("deeper than the limit of 64")) << deep.status();
  // What the scan lets through parses on the same stack.
  absl::StatusOr<v1::JobSpec> at_limit = ParseOnSmallStack(NestedJson(63));
  EXPECT_THAT(at_limit.status().message(), HasSubstr("name: expected a string")) << at_limit.status();
}

TEST(SpecTextTest, TextLargerThanTheLimitIsRefusedBeforeParsing) {
  const std::string big = "name: x\n" + std::string(1 << 20, '#');
  EXPECT_THAT(ParseError(big), HasSubstr("job.json: more than the limit of 1048576 bytes for a job spec"));
  const std::string path = ::testing::TempDir() + "/big_spec.yaml";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  for (int i = 0; i < 3; ++i) std::fwrite(big.data(), 1, big.size(), f);
  std::fclose(f);
  absl::StatusOr<v1::JobSpec> loaded = LoadJobSpecFile(path);
  EXPECT_THAT(loaded.status().message(), HasSubstr("more than the limit of 1048576 bytes")) << loaded.status();
  std::remove(path.c_str());
}

TEST(SpecTextTest, BytesThatAreNotUtf8TextAreRefusedWithTheirPlace) {
  EXPECT_THAT(ParseError("name: a\nmodel: {preset: \x01}\n"), HasSubstr("line 2, column 17: control character 0x01"));
  EXPECT_THAT(ParseError("name: \"a\x04\"\n"), HasSubstr("control character 0x04"));
  EXPECT_THAT(ParseError("name: \xff\xfe\n"), HasSubstr("line 1, column 7: not UTF-8 text"));
  // UTF-16 with its byte order mark: yaml-cpp would decode it; the spec must be UTF-8.
  EXPECT_THAT(ParseError(std::string("\xff\xfen\0a\0m\0e\0:\0 \0x\0", 16)), HasSubstr("line 1, column 1: not UTF-8"));
  // A UTF-8 byte order mark is fine, tabs and CRLF too.
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("\xEF\xBB\xBFname:\tx\r\nmodel: {preset: mlp}\r\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "x");
}

TEST(SpecTextTest, AnchorsAliasesTagsAndDirectivesAreRefused) {
  // An alias repeats a value without repeating its bytes: 64 aliases of 64 aliases of a 4 KiB string.
  EXPECT_THAT(ParseError("name: &n x\nmodel: {preset: *n}\n"),
              HasSubstr("line 1, column 7: anchors (&) and aliases (*) are not supported in a job spec"));
  EXPECT_THAT(ParseError("name: !!str 12\n"), HasSubstr("line 1, column 7: tags (!) are not supported"));
  EXPECT_THAT(ParseError("%YAML 1.2\n---\nname: x\n"), HasSubstr("line 1, column 1: directives (%) are not supported"));
  // The characters themselves are fine inside scalars.
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("name: a&b*c!d%e\n", "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "a&b*c!d%e");
}

TEST(SpecTextTest, TheScanFollowsYamlThatNeedsNoNesting) {
  // Brackets inside quotes, comments and block scalars are text, not nesting; so are 100 of them.
  const std::string brackets = Repeat("[{", 100);
  const std::string text = "# " + brackets + "\nname: >-\n  folded " + brackets + "\n  name\n" +
                           "data:\n  text:\n    paths: ['a " + brackets + "', \"b " + brackets + "\",\n" +
                           "      c]  # " + brackets + "\nmodel: {preset: gpt-tiny}\n";
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec(text, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "folded " + brackets + " name");
  ASSERT_EQ(spec->data().text().paths_size(), 3);
  EXPECT_EQ(spec->data().text().paths(2), "c");
}

TEST(SpecTextTest, ACommaOutsideAFlowCollectionIsRefusedBeforeYamlCppLoopsOnIt) {
  // yaml-cpp 0.7 allocates without end on each of these (the process runs out of memory).
  EXPECT_THAT(ParseError(","), HasSubstr("job.json: line 1, column 1: ',' outside a flow list or map"));
  EXPECT_THAT(ParseError("{\"name\": \"x\"},"), HasSubstr("line 1, column 14: ',' outside a flow list or map"));
  EXPECT_THAT(ParseError(",[[[]]]"), HasSubstr("',' outside a flow list or map"));
  // Inside flow collections commas are what they always were.
  absl::StatusOr<v1::JobSpec> spec = ParseJobSpec("{name: a, model: {preset: mlp, mlp: {hiddenDims: [1, 2]}}}", "j");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().mlp().hidden_dims_size(), 2);
}

TEST(SpecTextTest, EachStringIsBoundedAndNamedByItsPath) {
  const std::string long_path(5000, 'p');
  EXPECT_THAT(ParseError("data: {text: {paths: [ok, " + long_path + "]}}\n"),
              HasSubstr("job.json: data.text.paths[1]: must be at most 4096 bytes, got 5000 bytes"));
  EXPECT_THAT(ParseError("{}", {"checkpoint.dir=" + long_path}), HasSubstr("checkpoint.dir: must be at most 4096"));
  // A spec that arrives as a proto (gRPC) is held to the same limit by validation.
  v1::JobSpec spec;
  FillDefaults(&spec);
  spec.mutable_ddp()->add_ignore_params("bias");
  spec.mutable_ddp()->add_ignore_params(long_path);
  const absl::Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "ddp.ignoreParams[1]: must be at most 4096 bytes, got 5000 bytes");
}

}  // namespace
}  // namespace gradsync::spec
