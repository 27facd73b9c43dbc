// The safetensors reader's validation on hand-made files, and the writer's round trip.
#include "gradsync/ckpt/safetensors.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/weights_file.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using ::testing::HasSubstr;

// u64 header length | header | data, as the format describes it.
std::string Bytes(const std::string& header, const std::string& data) {
  const uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), sizeof(n));
  return out + header + data;
}

std::string Floats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return out;
}

class SafetensorsTest : public testing::TempDirTest {};

TEST_F(SafetensorsTest, RoundTripsTensorsAndMetadata) {
  const std::string path = FreshDir("out") + "/model.safetensors";
  const std::vector<NamedTensor> tensors = {
      {"a.weight", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"a.bias", {3}, {-1, 0.5f, 1e-30f}}, {"empty", {0, 4}, {}}};
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"format", "pt"}, {"note", "say \"hi\"\n"}}).ok());
  absl::StatusOr<SafetensorsFile> read = ReadSafetensors(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->tensors.size(), 3u);
  EXPECT_EQ(read->metadata.at("note"), "say \"hi\"\n");
  for (const NamedTensor& t : tensors) {
    const auto it = std::find_if(read->tensors.begin(), read->tensors.end(),
                                 [&](const NamedTensor& r) { return r.name == t.name; });
    ASSERT_NE(it, read->tensors.end()) << t.name;
    EXPECT_EQ(it->shape, t.shape);
    EXPECT_EQ(it->values, t.values);
  }
  // The data starts 8-byte aligned, as Hugging Face's writer leaves it.
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), sizeof(n));
  EXPECT_EQ(n % 8, 0u);
}

TEST_F(SafetensorsTest, ConvertsBf16AndF16ToFp32) {
  // bf16 0x3fc0 = 1.5, 0xc000 = -2; f16 0x3c00 = 1, 0x0001 = 2^-24 (subnormal), 0xfc00 = -inf.
  const std::string data("\xc0\x3f\x00\xc0\x00\x3c\x01\x00\x00\xfc", 10);
  const std::string header =
      R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"h":{"dtype":"F16","shape":[3],"data_offsets":[4,10]}})";
  absl::StatusOr<SafetensorsFile> f = ParseSafetensors(Bytes(header, data), "mem");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->tensors[0].values, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(f->tensors[1].values[0], 1.0f);
  EXPECT_EQ(f->tensors[1].values[1], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(f->tensors[1].values[2]) && f->tensors[1].values[2] < 0);
}

TEST_F(SafetensorsTest, RefusesTruncatedFiles) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string whole = Bytes(header, Floats({1, 2}));
  auto cut = ParseSafetensors(whole.substr(0, whole.size() - 3), "model.safetensors");
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(cut.status().message(), HasSubstr("tensor \"w\""));
  EXPECT_THAT(cut.status().message(), HasSubstr("past the data"));
  auto no_header = ParseSafetensors(whole.substr(0, 20), "model.safetensors");
  EXPECT_EQ(no_header.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(no_header.status().message(), HasSubstr("does not fit"));
  EXPECT_FALSE(ParseSafetensors(whole.substr(0, 5), "m").ok());
}

TEST_F(SafetensorsTest, RefusesGapsOverlapsAndUncoveredData) {
  const auto gap = ParseSafetensors(
      Bytes(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
          Floats({1, 2, 3})),
      "m");
  EXPECT_THAT(gap.status().message(), HasSubstr("tensor \"b\": data_offsets begin at byte 8 where byte 4"));
  const auto overlap = ParseSafetensors(
      Bytes(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          Floats({1, 2})),
      "m");
  EXPECT_THAT(overlap.status().message(), HasSubstr("tensor \"b\": data_offsets begin at byte 4 where byte 8"));
  const auto extra =
      ParseSafetensors(Bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", Floats({1, 2})), "m");
  EXPECT_THAT(extra.status().message(), HasSubstr("cover 4 bytes of data, the file holds 8"));
  const auto backwards =
      ParseSafetensors(Bytes(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", Floats({1})), "m");
  EXPECT_THAT(backwards.status().message(), HasSubstr("tensor \"a\": data_offsets must be"));
}

TEST_F(SafetensorsTest, RefusesOtherDtypesNamingTheTensor) {
  const auto ints = ParseSafetensors(
      Bytes(R"({"step":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0')), "m");
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(ints.status().message(), HasSubstr("tensor \"step\": dtype must be F32, BF16 or F16"));
}

TEST_F(SafetensorsTest, RefusesAShapeTheBytesDoNotHold) {
  const auto wrong = ParseSafetensors(
      Bytes(R"({"h.0.attn.c_attn.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,8]}})", Floats({1, 2})), "m");
  EXPECT_THAT(wrong.status().message(),
              HasSubstr("tensor \"h.0.attn.c_attn.weight\": data_offsets [0, 8) hold 8 bytes; shape [2, 3] of F32 "
                        "needs 24"));
  const auto negative =
      ParseSafetensors(Bytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", Floats({1})), "m");
  EXPECT_THAT(negative.status().message(), HasSubstr("tensor \"w\": shape must be a list of non-negative"));
  const auto huge = ParseSafetensors(
      Bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", Floats({1})), "m");
  EXPECT_THAT(huge.status().message(), HasSubstr("tensor \"w\""));
}

TEST_F(SafetensorsTest, RefusesHeadersThatAreNotObjectsOfTensors) {
  EXPECT_THAT(ParseSafetensors(Bytes("[1,2]", ""), "m").status().message(), HasSubstr("not a JSON object"));
  EXPECT_THAT(ParseSafetensors(Bytes(R"({"w":3})", ""), "m").status().message(), HasSubstr("tensor \"w\""));
  EXPECT_THAT(ParseSafetensors(Bytes(R"({"__metadata__":{"k":1}})", ""), "m").status().message(),
              HasSubstr("__metadata__ \"k\" must be a string"));
}

// A directory opened as a stream reads with an exception (std::__ios_failure, exit 134 when
// uncaught); every reader of libs/ckpt refuses it with a status instead.
TEST_F(SafetensorsTest, ReadersRefuseADirectoryWithAStatus) {
  const std::string dir = FreshDir("d");
  const absl::StatusOr<SafetensorsFile> s = ReadSafetensors(dir);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("is a directory"));
  const absl::StatusOr<WeightsFile> w = LoadWeights(dir);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadSafetensors(dir + "/missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gradsync::ckpt
