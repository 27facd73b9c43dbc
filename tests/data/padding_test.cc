// Padding samples (the "pad" last-batch policy) are inert: a batch with padding gives the loss and
// the gradients of the same batch without it, for the classifier and for the transformer.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gradsync/data/dataset.h"
#include "gradsync/nn/model.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::data {
namespace {

struct Outcome {
  nn::LossSum loss;
  std::vector<float> grads;
};

Outcome Run(const gradsync::v1::JobSpec& spec, const Dataset& dataset, const std::vector<int64_t>& indices) {
  auto model = gradsync::testing::ModelOf(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  (*model)->InitParams(5);
  (*model)->ZeroGrads();
  nn::Batch batch;
  EXPECT_TRUE(dataset.Fill(indices, &batch).ok());
  auto loss = (*model)->ForwardBackward(batch, 0.25f, {});
  EXPECT_TRUE(loss.ok()) << loss.status();
  return Outcome{*loss, std::vector<float>((*model)->grads().begin(), (*model)->grads().end())};
}

void ExpectPaddingInert(const gradsync::v1::JobSpec& spec) {
  auto dataset = gradsync::testing::DatasetOf(spec);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  const Outcome plain = Run(spec, **dataset, {3, 1});
  const Outcome padded = Run(spec, **dataset, {3, kPadIndex, 1, kPadIndex});
  EXPECT_EQ(padded.loss.count, plain.loss.count);
  EXPECT_NEAR(padded.loss.sum, plain.loss.sum, 1e-5 * std::abs(plain.loss.sum));
  ASSERT_EQ(padded.grads.size(), plain.grads.size());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::abs(padded.grads[i] - plain.grads[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::abs(plain.grads[i])));
  }
  ASSERT_GT(max_abs, 0.0);
  EXPECT_LE(max_diff, 1e-5 * max_abs);
}

TEST(PaddingTest, PaddedClassifierBatchMatchesTheUnpaddedOne) {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("mlp");
  spec.mutable_model()->mutable_mlp()->add_hidden_dims(16);
  spec.mutable_model()->mutable_mlp()->set_activation("gelu");
  auto* data = spec.mutable_data()->mutable_synthetic();
  data->set_num_samples(64);
  data->set_input_dim(8);
  data->set_num_classes(4);
  data->set_teacher_hidden(8);
  data->set_seed(3);
  ExpectPaddingInert(spec);
}

TEST(PaddingTest, PaddedTransformerBatchMatchesTheUnpaddedOne) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "padding_test";
  std::filesystem::create_directories(dir);
  const std::string text = (dir / "corpus.txt").string();
  std::ofstream(text) << "padding samples must add nothing to the loss or to any gradient.";
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  spec.mutable_model()->mutable_transformer()->set_seq_len(8);
  spec.mutable_data()->mutable_text()->add_paths(text);
  ExpectPaddingInert(spec);
}

}  // namespace
}  // namespace gradsync::data
