// The golden run's inputs and expectations (golden/gpt2_golden.json, written by PyTorch in
// float64 through golden/make_gpt2_golden.py, with the bounds it derived for float32), shared by
// the CPU model's test (golden_test.cc) and the GPU model's (tests/nn_cuda/cuda_golden_test.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/param_layout.h"
#include "gradsync/spec/job_spec.h"
#include "gtest/gtest.h"

namespace gradsync::nn::golden {

using google::protobuf::Struct;
using google::protobuf::Value;

inline Struct Load() {
  std::ifstream in(std::string(GRADSYNC_GOLDEN_DIR) + "/gpt2_golden.json");
  std::stringstream text;
  text << in.rdbuf();
  Struct golden;
  const auto status = google::protobuf::util::JsonStringToMessage(text.str(), &golden);
  EXPECT_TRUE(status.ok()) << status;
  return golden;
}

inline double Num(const Struct& s, const std::string& key) { return s.fields().at(key).number_value(); }

inline std::vector<double> Nums(const Struct& s, const std::string& key) {
  std::vector<double> out;
  for (const Value& v : s.fields().at(key).list_value().values()) out.push_back(v.number_value());
  return out;
}

// The gpt-tiny spec shrunk to the golden config.
inline v1::JobSpec Spec(const Struct& golden) {
  const Struct& config = golden.fields().at("config").struct_value();
  v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  v1::TransformerConfig* t = spec.mutable_model()->mutable_transformer();
  t->set_layers(static_cast<int>(Num(config, "layers")));
  t->set_heads(static_cast<int>(Num(config, "heads")));
  t->set_width(static_cast<int>(Num(config, "width")));
  t->set_mlp_width(static_cast<int>(Num(config, "mlp_width")));
  t->set_seq_len(static_cast<int>(Num(config, "seq_len")));
  t->set_vocab_size(static_cast<int>(Num(config, "vocab")));
  spec::FillDefaults(&spec);
  return spec;
}

// The generator's formulas (see make_gpt2_golden.py).
inline double InitValue(const std::string& name, int p, int64_t i) {
  if (absl::EndsWith(name, "bias")) return 0.02 * std::sin(0.3 * i + p);
  if (absl::StrContains(name, "ln")) return 1.0 + 0.1 * std::sin(0.7 * i + p);  // ln1, ln2, lnf gains
  return 0.05 * std::sin(0.37 * i + 1.1 * p);
}

// The initial parameters as one host buffer in `layout`'s order.
inline std::vector<float> InitialParams(const ParamLayout& layout) {
  std::vector<float> params(layout.total_numel());
  for (int p = 0; p < layout.size(); ++p) {
    const ParamInfo& info = layout.param(p);
    for (int64_t i = 0; i < info.numel; ++i) params[info.offset + i] = static_cast<float>(InitValue(info.name, p, i));
  }
  return params;
}

inline int32_t Token(int64_t b, int64_t t, int64_t s, int64_t v) {
  return static_cast<int32_t>((7 * b + 13 * t + 5 * s + (b * t) % 11) % v);
}

inline Batch MakeBatch(const Struct& golden, int64_t step) {
  const Struct& config = golden.fields().at("config").struct_value();
  const auto size = static_cast<int64_t>(Num(golden, "batch")), seq_len = static_cast<int64_t>(Num(config, "seq_len"));
  const auto vocab = static_cast<int64_t>(Num(config, "vocab"));
  Batch batch;
  batch.size = size;
  for (int64_t b = 0; b < size; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      batch.tokens.push_back(Token(b, t, step, vocab));
      batch.targets.push_back(t + 1 < seq_len ? Token(b, t + 1, step, vocab)
                                              : static_cast<int32_t>((7 * b + 13 * (t + 1) + 5 * step) % vocab));
    }
  }
  return batch;
}

// Compares one step's loss and gradient norm with the float64 reference, within the bounds the
// generator derived for float32 arithmetic in any summation order (rounding of the forward and
// backward sums, its path through clipping and AdamW into the later steps' parameters, and from
// there into the loss and the norm: make_gpt2_golden.py's docstring, rules 1 to 4). `slack`
// widens them for arithmetic outside that model (a GPU's approximate transcendentals).
// Returns the larger of the two |difference| / bound ratios, for the test's summary line.
inline double ExpectStep(const Struct& golden, size_t step, double loss, double norm, double slack = 1) {
  const double want_loss = Nums(golden, "losses")[step], want_norm = Nums(golden, "gradNorms")[step];
  const double loss_bound = slack * Nums(golden, "lossBounds")[step];
  const double norm_bound = slack * Nums(golden, "gradNormBounds")[step];
  EXPECT_NEAR(loss, want_loss, loss_bound) << "loss of step " << step;
  EXPECT_NEAR(norm, want_norm, norm_bound) << "gradient norm of step " << step;
  return std::max(std::abs(loss - want_loss) / loss_bound, std::abs(norm - want_norm) / norm_bound);
}

// How the final parameters compare with the reference's samples: the elements beyond their
// derived bound (times `slack`), and how tight the bounds are, so that a test can also require
// them to constrain something.
struct FinalParamCheck {
  int compared = 0;
  int beyond = 0;            // elements farther from the reference than their bound
  double worst_ratio = 0;    // the largest |difference| / bound
  std::string first_beyond;  // the first such element, for the failure message
  double median_bound = 0;
};

inline FinalParamCheck CompareFinalParams(const Struct& golden, const std::vector<float>& params, double slack = 1) {
  const std::vector<double> samples = Nums(golden, "finalParamSamples"), bounds = Nums(golden, "finalParamBounds");
  const auto every = static_cast<size_t>(Num(golden, "sampleEvery"));
  EXPECT_EQ(samples.size(), (params.size() + every - 1) / every);
  EXPECT_EQ(samples.size(), bounds.size());
  FinalParamCheck check;
  for (size_t k = 0; k < samples.size() && k < bounds.size() && k * every < params.size(); ++k) {
    const double diff = std::abs(static_cast<double>(params[k * every]) - samples[k]);
    const double bound = slack * bounds[k];
    check.worst_ratio = std::max(check.worst_ratio, diff / bound);
    if (diff > bound && check.beyond++ == 0) {
      check.first_beyond = "element " + std::to_string(k * every) + ": " + std::to_string(params[k * every]) + " vs " +
                           std::to_string(samples[k]) + ", bound " + std::to_string(bound);
    }
    ++check.compared;
  }
  std::vector<double> sorted = bounds;
  std::sort(sorted.begin(), sorted.end());
  if (!sorted.empty()) check.median_bound = sorted[sorted.size() / 2];
  return check;
}

}  // namespace gradsync::nn::golden
