#include "gradsync/ckpt/weights_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>

#include "gmock/gmock.h"
#include "gradsync/ckpt/checksum.h"
#include "gradsync/core/digest.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

using ::testing::HasSubstr;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class WeightsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("weights-" + std::to_string(::getpid()));
    layout_.Add("layers.0.weight", {3, 2}, true);
    layout_.Add("layers.0.bias", {3}, false);
    values_ = {1, 2, 3, 4, 5, 6, -1, -2, -3};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path() const { return (dir_ / "sub" / "weights.bin").string(); }

  static v1::ModelSpec Model() {
    v1::ModelSpec m;
    m.set_preset("mlp");
    m.mutable_mlp()->add_hidden_dims(3);
    return m;
  }

  std::filesystem::path dir_;
  nn::ParamLayout layout_;
  std::vector<float> values_;
};

TEST_F(WeightsFileTest, RoundTripsNamesShapesAndValues) {
  ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
  auto loaded = LoadWeights(Path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->values, values_);
  EXPECT_EQ(loaded->model.preset(), "mlp");
  EXPECT_EQ(loaded->model.mlp().hidden_dims(0), 3);
  ASSERT_EQ(loaded->layout.size(), 2);
  EXPECT_EQ(loaded->layout.param(0).name, "layers.0.weight");
  EXPECT_EQ(loaded->layout.param(0).shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(loaded->layout.param(1).offset, 6);
}

TEST_F(WeightsFileTest, DetectsAFlippedByte) {
  ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
  std::fstream f(Path(), std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-12, std::ios::end);
  f.put('\x7f');
  f.close();
  auto loaded = LoadWeights(Path());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(loaded.status().message().find("checksum"), std::string::npos) << loaded.status();
}

TEST_F(WeightsFileTest, DetectsTruncationAndForeignFiles) {
  ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
  std::filesystem::resize_file(Path(), std::filesystem::file_size(Path()) - 5);
  EXPECT_EQ(LoadWeights(Path()).status().code(), absl::StatusCode::kDataLoss);
  std::ofstream(Path()) << "hello world, not weights";
  auto foreign = LoadWeights(Path());
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(foreign.status().message().find("bad magic"), std::string::npos);
  EXPECT_EQ(LoadWeights((dir_ / "missing").string()).status().code(), absl::StatusCode::kNotFound);
}

// The file as version 2 wrote it: the same bytes with version 2 and an FNV-1a trailer (computed
// with gradsync/core's Fnv1a64, not with the checksum code under test).
void RewriteAsFnvFile(const std::string& path) {
  std::string bytes = Contents(path);
  const uint32_t version = 2;
  std::memcpy(bytes.data() + 8, &version, sizeof(version));
  bytes.resize(bytes.size() - sizeof(uint64_t));
  const uint64_t trailer = Fnv1a64(std::as_bytes(std::span(bytes.data(), bytes.size())));
  bytes.append(reinterpret_cast<const char*>(&trailer), sizeof(trailer));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST_F(WeightsFileTest, NewFilesAreVersion3WithAnXxh3Trailer) {
  ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
  const std::string bytes = Contents(Path());
  EXPECT_EQ(bytes[8], 3);
  uint64_t trailer = 0;
  std::memcpy(&trailer, bytes.data() + bytes.size() - sizeof(trailer), sizeof(trailer));
  StreamingChecksum content(ChecksumAlgorithm::kXxh3_64);
  content.Update(std::as_bytes(std::span(bytes.data(), bytes.size() - sizeof(trailer))));
  EXPECT_EQ(trailer, content.Value());
}

TEST_F(WeightsFileTest, AVersion2FileWithAnFnvTrailerStillLoads) {
  ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
  RewriteAsFnvFile(Path());
  auto loaded = LoadWeights(Path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->values, values_);
  EXPECT_EQ(loaded->layout.param(0).name, "layers.0.weight");
}

TEST_F(WeightsFileTest, AFlippedByteIsDetectedUnderEitherAlgorithm) {
  for (bool fnv : {false, true}) {
    ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
    if (fnv) RewriteAsFnvFile(Path());
    std::string bytes = Contents(Path());
    bytes[bytes.size() - 12] ^= 0x01;
    std::ofstream(Path(), std::ios::binary | std::ios::trunc) << bytes;
    auto loaded = LoadWeights(Path());
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(Path()));
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("checksum mismatch"));
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(fnv ? "by fnv1a64" : "by xxh3-64"));
  }
}

TEST_F(WeightsFileTest, AnUnknownVersionIsRefusedBeforeItsChecksum) {
  ASSERT_TRUE(SaveWeights(Path(), Model(), layout_, values_).ok());
  std::string bytes = Contents(Path());
  bytes[8] = 9;
  std::ofstream(Path(), std::ios::binary | std::ios::trunc) << bytes;
  auto loaded = LoadWeights(Path());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("unsupported version 9"));
}

TEST_F(WeightsFileTest, RefusesAMismatchedValueCount) {
  values_.pop_back();
  EXPECT_EQ(SaveWeights(Path(), Model(), layout_, values_).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::ckpt
