// What the replica tests share: an assignment for gpt-tiny with a given placement (the spec's own
// choices left at auto, as the coordinator resolved them), its train::TrainConfig, and a batch of token
// windows for it.
#pragma once

#include <string>

#include "absl/strings/str_cat.h"
#include "gradsync/nn/model.h"
#include "gradsync/spec/job_spec.h"
#include "gradsync/train/train_config.h"
#include "gradsync/v1/coordinator.pb.h"
#include "gtest/gtest.h"

namespace gradsync::worker {

inline v1::Assignment TinyAssignment(const std::string& device, const std::string& backend,
                                     const std::string& precision, int world_size = 1) {
  absl::StatusOr<v1::JobSpec> spec = spec::Normalize(*spec::ParseJobSpec(
      absl::StrCat("model: {preset: gpt-tiny, device: ", device == "cpu" ? "cpu" : "cuda", ", precision: ", precision,
                   "}\ndata: {text: {paths: [a.txt]}}\ntraining: {worldSize: ", world_size,
                   ", seed: 5, gradClip: 0.5}"),
      "replica-test.yaml"));
  EXPECT_TRUE(spec.ok()) << spec.status();
  v1::Assignment a;
  a.set_job_id("replica-test");
  a.set_generation(1);
  a.set_world_size(world_size);
  if (spec.ok()) *a.mutable_spec() = *spec;
  a.mutable_placement()->set_device(device);
  a.mutable_placement()->set_backend(backend);
  a.mutable_placement()->set_precision(precision);
  return a;
}

// The config the worker builds from `a`.
inline train::TrainConfig ConfigOf(const v1::Assignment& a) {
  absl::StatusOr<train::TrainConfig> c = train::TrainConfigFromAssignment(a);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : train::TrainConfig();
}

// `size` windows of gpt-tiny's 128 tokens, the targets the next token.
inline nn::Batch TinyBatch(int size, int salt) {
  nn::Batch b;
  b.size = size;
  for (int i = 0; i < size * 128; ++i) {
    b.tokens.push_back((i * 37 + salt * 11) % 256);
    b.targets.push_back((i * 37 + salt * 11 + 37) % 256);
  }
  return b;
}

}  // namespace gradsync::worker
