// The golden test: the first steps of a fixed tiny gpt2 transformer (losses, gradient norms and
// the final parameters after AdamW with clipping) against the values PyTorch computed in float64
// for the same network, inputs and optimizer, within the bounds it derived for float32 arithmetic
// in any summation order (golden/make_gpt2_golden.py wrote golden/gpt2_golden.json; its docstring
// gives the formulas both sides build the weights and tokens from, and the derivation).
#include <algorithm>
#include <iostream>

#include "golden_util.h"
#include "gradsync/nn/optimizer.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::nn {
namespace {

TEST(Golden, Gpt2FirstStepsMatchPyTorch) {
  const golden::Struct g = golden::Load();
  ASSERT_TRUE(g.fields().contains("losses")) << "golden/gpt2_golden.json is missing or unreadable";
  auto created = gradsync::testing::ModelOf(golden::Spec(g));
  ASSERT_TRUE(created.ok()) << created.status();
  Model& model = **created;
  ASSERT_EQ(model.layout().total_numel(), static_cast<int64_t>(golden::Num(g, "paramCount")))
      << "the two networks must have the same parameters";
  const std::vector<float> init = golden::InitialParams(model.layout());
  std::copy(init.begin(), init.end(), model.params().begin());

  const std::vector<double> betas = golden::Nums(g, "betas");
  AdamW adamw(model.layout(), {betas[0], betas[1], golden::Num(g, "eps"), golden::Num(g, "weightDecay")});
  const size_t steps = golden::Nums(g, "losses").size();
  double worst_step = 0;
  for (size_t step = 0; step < steps; ++step) {
    const Batch batch = golden::MakeBatch(g, static_cast<int64_t>(step));
    model.ZeroGrads();
    auto loss = model.ForwardBackward(batch, 1.0f / static_cast<float>(batch.tokens.size()), {});
    ASSERT_TRUE(loss.ok()) << loss.status();
    const double norm = ClipGlobalNorm(model.grads(), golden::Num(g, "gradClip"));
    adamw.Step(model.params(), model.grads(), golden::Num(g, "lr"));
    worst_step = std::max(worst_step, golden::ExpectStep(g, step, loss->sum / static_cast<double>(loss->count), norm));
  }
  const golden::FinalParamCheck check =
      golden::CompareFinalParams(g, std::vector<float>(model.params().begin(), model.params().end()));
  EXPECT_GT(check.compared, 700);
  EXPECT_EQ(check.beyond, 0) << "final parameters beyond their bounds, first " << check.first_beyond
                             << "; worst |difference| / bound " << check.worst_ratio;
  // The bounds must also bind: eight steps of lr 1e-3 move a weight by up to 8e-3, and the median
  // bound stays a hundred times below that.
  EXPECT_LT(check.median_bound, 8e-5);
  std::cout << "golden: largest |difference| / bound: " << worst_step << " (losses, norms), " << check.worst_ratio
            << " (final parameters)\n";
}

}  // namespace
}  // namespace gradsync::nn
