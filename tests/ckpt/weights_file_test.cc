#include "gradsync/ckpt/weights_file.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace gradsync::ckpt {
namespace {

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

TEST_F(WeightsFileTest, RefusesAMismatchedValueCount) {
  values_.pop_back();
  EXPECT_EQ(SaveWeights(Path(), Model(), layout_, values_).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::ckpt
