// The synthetic task is learnable by the default model: a few hundred AdamW steps take the
// held-out loss far below chance (ln 10). This guards the teacher's design as much as the model.
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "gradsync/core/rng.h"
#include "gradsync/data/dataset.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::data {
namespace {

gradsync::v1::JobSpec DefaultSpec() {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("mlp");
  spec.mutable_model()->mutable_mlp()->add_hidden_dims(128);
  spec.mutable_model()->mutable_mlp()->add_hidden_dims(128);
  spec.mutable_model()->mutable_mlp()->set_activation("gelu");
  gradsync::v1::SyntheticData* data = spec.mutable_data()->mutable_synthetic();
  data->set_num_samples(8192);
  data->set_input_dim(32);
  data->set_num_classes(10);
  data->set_teacher_hidden(64);
  data->set_seed(1234);
  spec.mutable_training()->set_seed(7);
  return spec;
}

constexpr int kSteps = 300;
constexpr int kBatch = 64;
// The last kHeldOut samples are never trained on.
constexpr int64_t kHeldOut = 1024;

double MeanLoss(nn::Model& model, const nn::Batch& batch) {
  absl::StatusOr<nn::LossSum> loss = model.Evaluate(batch);
  EXPECT_TRUE(loss.ok()) << loss.status();
  return loss->sum / static_cast<double>(loss->count);
}

TEST(LearnableTest, LossFallsWellBelowChance) {
  const gradsync::v1::JobSpec spec = DefaultSpec();
  absl::StatusOr<std::unique_ptr<Dataset>> dataset = gradsync::testing::DatasetOf(spec);
  absl::StatusOr<std::unique_ptr<nn::Model>> model = gradsync::testing::ModelOf(spec);
  ASSERT_TRUE(dataset.ok() && model.ok());
  const int64_t train_size = (*dataset)->size() - kHeldOut;

  std::vector<int64_t> held_out;
  for (int64_t i = train_size; i < (*dataset)->size(); ++i) held_out.push_back(i);
  nn::Batch eval;
  ASSERT_TRUE((*dataset)->Fill(held_out, &eval).ok());
  const double initial = MeanLoss(**model, eval);

  nn::AdamW adam((*model)->layout(), nn::AdamWConfig{.beta1 = 0.9, .beta2 = 0.95});
  Rng rng(11);
  std::vector<int64_t> indices(kBatch);
  nn::Batch batch;
  for (int step = 0; step < kSteps; ++step) {
    for (int64_t& i : indices) i = static_cast<int64_t>(rng.Below(train_size));
    ASSERT_TRUE((*dataset)->Fill(indices, &batch).ok());
    (*model)->ZeroGrads();
    ASSERT_TRUE((*model)->ForwardBackward(batch, 1.0f / kBatch, {}).ok());
    adam.Step((*model)->params(), (*model)->grads(), 1e-3);
  }
  const double final_loss = MeanLoss(**model, eval);
  RecordProperty("initial_loss", std::to_string(initial));
  RecordProperty("final_loss", std::to_string(final_loss));
  EXPECT_GT(initial, 0.8 * std::log(10.0));
  EXPECT_LT(final_loss, 0.5 * std::log(10.0)) << "initial " << initial;
}

}  // namespace
}  // namespace gradsync::data
