// Shared pieces of the GPU model tests: the skip when no device is present, the tiny specs,
// batches, downloads of device spans and the comparison against the CPU model.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/core/rng.h"
#include "gradsync/nn/cuda/cuda_model.h"
#include "gradsync/nn/model.h"
#include "gradsync/v1/job.pb.h"
#include "plans.h"
#include "test_util.h"

namespace gradsync::nn::cuda::testing {

// The device check and the comparison of tests/kernels_cuda/test_util.h.
using gradsync::kernels::cuda::testing::Close;
using gradsync::kernels::cuda::testing::NoDeviceReason;
using gradsync::kernels::cuda::testing::Tolerance;

// Skips without a device; owns a stream for the models under test.
class CudaModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = NoDeviceReason();
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  CudaModelOptions Options(Precision precision) const {
    CudaModelOptions options;
    options.stream = stream_;
    options.precision = precision;
    return options;
  }

  cudaStream_t stream_ = nullptr;
};

// The flavour's preset shrunk to L2 H4 C128 M256 T16 V256 (head dim 32, the smallest the
// attention kernels take); llama with 2 kv heads and a small rope base so positions rotate
// visibly within 16 tokens.
inline gradsync::v1::JobSpec TinySpec(const std::string& flavour) {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset(flavour == "gpt2" ? "gpt-tiny" : "minimind-26m");
  gradsync::v1::TransformerConfig* t = spec.mutable_model()->mutable_transformer();
  t->set_layers(2);
  t->set_heads(4);
  t->set_kv_heads(flavour == "gpt2" ? 4 : 2);
  t->set_width(128);
  t->set_mlp_width(flavour == "gpt2" ? 256 : 192);
  t->set_seq_len(16);
  t->set_vocab_size(256);
  if (flavour == "llama") t->set_rope_theta(100.0);
  spec.mutable_training()->set_seed(42);
  return spec;
}

// `size` sequences of `seq_len` random tokens with random targets; every `ignore_every`-th
// target (if > 0) is -1.
inline Batch RandomBatch(int64_t size, int64_t seq_len, int vocab, uint64_t seed, int ignore_every = 0) {
  Rng rng(seed);
  Batch batch;
  batch.size = size;
  for (int64_t i = 0; i < size * seq_len; ++i) {
    batch.tokens.push_back(static_cast<int32_t>(rng.Below(vocab)));
    const bool ignored = ignore_every > 0 && i % ignore_every == ignore_every - 1;
    batch.targets.push_back(ignored ? -1 : static_cast<int32_t>(rng.Below(vocab)));
  }
  return batch;
}

// Waits for all device work, then copies a device span to the host.
inline std::vector<float> ToHost(std::span<const float> device) {
  std::vector<float> host(device.size());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), device.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

inline int64_t Count(const Batch& batch) {
  int64_t count = 0;
  for (int32_t t : batch.targets) count += t != -1;
  return count;
}

inline std::unique_ptr<Model> MustCreateCpu(const gradsync::v1::JobSpec& spec) {
  absl::StatusOr<std::unique_ptr<Model>> model = gradsync::testing::ModelOf(spec);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

// CreateCudaModel of the spec's plan, as a worker builds it.
inline absl::StatusOr<std::unique_ptr<CudaModel>> CudaModelOf(const gradsync::v1::JobSpec& spec,
                                                              const CudaModelOptions& options) {
  absl::StatusOr<ModelPlan> plan = gradsync::spec::PlanModel(spec);
  if (!plan.ok()) return plan.status();
  return CreateCudaModel(*plan, options);
}

inline std::unique_ptr<CudaModel> MustCreateCuda(const gradsync::v1::JobSpec& spec, const CudaModelOptions& options) {
  absl::StatusOr<std::unique_ptr<CudaModel>> model = CudaModelOf(spec, options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

}  // namespace gradsync::nn::cuda::testing
