// Tiny transformer specs and batches shared by the transformer tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gradsync/core/rng.h"
#include "gradsync/nn/model.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"
#include "model_properties.h"
#include "plans.h"

namespace gradsync::nn::testing {

// A spec of the flavour's preset shrunk to L2 H2 C8 M12 T5 V7; the llama one has one kv head
// and a small rope base so that positions rotate visibly.
inline gradsync::v1::JobSpec TinySpec(const std::string& flavour) {
  gradsync::v1::JobSpec spec;
  gradsync::v1::TransformerConfig* t = spec.mutable_model()->mutable_transformer();
  spec.mutable_model()->set_preset(flavour == "gpt2" ? "gpt-tiny" : "minimind-26m");
  t->set_layers(2);
  t->set_heads(2);
  t->set_kv_heads(flavour == "gpt2" ? 2 : 1);
  t->set_width(8);
  t->set_mlp_width(12);
  t->set_seq_len(5);
  t->set_vocab_size(7);
  if (flavour == "llama") t->set_rope_theta(100.0);
  spec.mutable_training()->set_seed(42);
  return spec;
}

inline std::unique_ptr<Model> MustCreate(const gradsync::v1::JobSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = gradsync::testing::ModelOf(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

// `size` sequences of `seq_len` random tokens; targets are the next token of a random stream.
inline Batch RandomTokens(int64_t size, int64_t seq_len, int vocab, uint64_t seed) {
  Rng rng(seed);
  Batch batch;
  batch.size = size;
  for (int64_t s = 0; s < size; ++s) {
    int32_t next = static_cast<int32_t>(rng.Below(vocab));
    for (int64_t t = 0; t < seq_len; ++t) {
      batch.tokens.push_back(next);
      next = static_cast<int32_t>(rng.Below(vocab));
      batch.targets.push_back(next);
    }
  }
  return batch;
}

}  // namespace gradsync::nn::testing
