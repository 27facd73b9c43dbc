// The golden run's inputs and expectations (golden/gpt2_golden.json, written by PyTorch through
// golden/make_gpt2_golden.py), shared by the CPU model's test (golden_test.cc) and the GPU
// model's (tests/nn_cuda/cuda_golden_test.cc).
#pragma once

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

// The key bias: adding a constant to one query's scores changes no softmax, so its gradient is
// zero in exact arithmetic and rounding noise in fp32, which AdamW turns into steps of +-lr whose
// signs differ between any two implementations. Final parameters are compared without it.
inline bool IsKeyBias(const ParamLayout& layout, int64_t width, int64_t flat) {
  for (int p = 0; p < layout.size(); ++p) {
    const ParamInfo& info = layout.param(p);
    if (flat < info.offset || flat >= info.offset + info.numel) continue;
    const int64_t i = flat - info.offset;
    return absl::EndsWith(info.name, "attn.qkv.bias") && i >= width && i < 2 * width;
  }
  return false;
}

// Compares one step's loss and gradient norm. The first steps agree to float rounding (measured
// on the CPU: 5e-8 in the loss and the norm at step 0, under 1e-6 by step 2), which pins the
// forward, the backward and AdamW; later steps drift apart through the key bias: a few 1e-6 in
// the loss, up to 2e-3 in the norm by step 7 (measured 1.6e-3). `slack` widens every bound (a
// GPU's different summation orders).
inline void ExpectStep(const Struct& golden, size_t step, double loss, double norm, double slack = 1) {
  const double want_loss = Nums(golden, "losses")[step], want_norm = Nums(golden, "gradNorms")[step];
  const bool early = step < 3;
  EXPECT_NEAR(loss, want_loss, slack * (early ? 1e-6 : 5e-6) * want_loss) << "loss of step " << step;
  EXPECT_NEAR(norm, want_norm, slack * (early ? 1e-5 : 3e-3) * want_norm) << "gradient norm of step " << step;
}

// The largest difference between `params` and the golden final parameters, key biases left out;
// `compared` counts the elements compared.
inline double FinalParamDifference(const Struct& golden, const ParamLayout& layout, const std::vector<float>& params,
                                   int* compared) {
  const std::vector<double> samples = Nums(golden, "finalParamSamples");
  const auto every = static_cast<size_t>(Num(golden, "sampleEvery"));
  const auto width = static_cast<int64_t>(Num(golden.fields().at("config").struct_value(), "width"));
  EXPECT_EQ(samples.size(), (params.size() + every - 1) / every);
  double worst = 0;
  *compared = 0;
  for (size_t k = 0; k < samples.size() && k * every < params.size(); ++k) {
    if (IsKeyBias(layout, width, static_cast<int64_t>(k * every))) continue;
    worst = std::max(worst, std::abs(static_cast<double>(params[k * every]) - samples[k]));
    ++*compared;
  }
  return worst;
}

}  // namespace gradsync::nn::golden
