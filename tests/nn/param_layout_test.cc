#include "gradsync/nn/param_layout.h"

#include <vector>

#include "gtest/gtest.h"

namespace gradsync::nn {
namespace {

ParamLayout TwoLayers() {
  ParamLayout layout;
  layout.Add("layers.0.weight", {3, 2}, true);
  layout.Add("layers.0.bias", {3}, false);
  layout.Add("layers.1.weight", {4, 3}, true);
  return layout;
}

TEST(ParamLayoutTest, PacksParametersInOrder) {
  const ParamLayout layout = TwoLayers();
  ASSERT_EQ(layout.size(), 3);
  EXPECT_EQ(layout.total_numel(), 6 + 3 + 12);
  EXPECT_EQ(layout.param(0).offset, 0);
  EXPECT_EQ(layout.param(1).offset, 6);
  EXPECT_EQ(layout.param(2).offset, 9);
  EXPECT_EQ(layout.param(2).numel, 12);
  EXPECT_EQ(layout.param(1).name, "layers.0.bias");
  EXPECT_FALSE(layout.param(1).weight_decay);
  EXPECT_EQ(layout.param(2).shape, (std::vector<int64_t>{4, 3}));

  std::vector<float> buffer(layout.total_numel());
  std::span<float> view = layout.View(std::span<float>(buffer), 1);
  EXPECT_EQ(view.data(), buffer.data() + 6);
  EXPECT_EQ(view.size(), 3u);
}

TEST(ParamLayoutTest, HashIsEqualForEqualLayouts) { EXPECT_EQ(TwoLayers().Hash(), TwoLayers().Hash()); }

TEST(ParamLayoutTest, HashSeesNamesShapesAndOrder) {
  const uint64_t base = TwoLayers().Hash();

  ParamLayout renamed;
  renamed.Add("layers.0.weight", {3, 2}, true);
  renamed.Add("layers.0.bias_", {3}, false);
  renamed.Add("layers.1.weight", {4, 3}, true);
  EXPECT_NE(renamed.Hash(), base);

  ParamLayout reshaped;  // same sizes and offsets, different shape
  reshaped.Add("layers.0.weight", {2, 3}, true);
  reshaped.Add("layers.0.bias", {3}, false);
  reshaped.Add("layers.1.weight", {4, 3}, true);
  EXPECT_NE(reshaped.Hash(), base);

  ParamLayout shorter;
  shorter.Add("layers.0.weight", {3, 2}, true);
  shorter.Add("layers.0.bias", {3}, false);
  EXPECT_NE(shorter.Hash(), base);

  EXPECT_NE(ParamLayout().Hash(), base);
}

}  // namespace
}  // namespace gradsync::nn
