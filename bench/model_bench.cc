// gradsync-model-bench: one model's training throughput on this machine, one process, no
// communication: forward + backward + AdamW per step, on random tokens (or the synthetic
// task's shapes for the mlp preset). Prints tokens (samples) per second and the FLOP rate that
// FlopsPerToken implies; with --device cuda, on one GPU, also the model FLOPs utilisation
// against the dense matmul rate measured on the card (model_bench_gpu.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gradsync/core/args.h"
#include "gradsync/core/digest.h"
#include "gradsync/core/rng.h"
#include "gradsync/device/device_request.h"
#include "gradsync/kernels/cpu/blas_threads.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/optimizer.h"
#include "gradsync/nn/presets.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "model_bench_gpu.h"

namespace {

constexpr char kUsage[] =
    "usage: gradsync-model-bench [--preset gpt-tiny] [--set model.transformer.layers=6 ...]\n"
    "                            [--batch 8] [--steps 20] [--warmup 3] [--threads 1]\n"
    "                            [--device cpu|cuda|cuda:N] [--precision bf16|fp32]\n"
    "                            [--attention products|flash|fused]\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s\n%s", message.c_str(), kUsage);
  return 2;
}

int RunOnGpu(const gradsync::nn::ModelPlan& plan, const gradsync::nn::Batch& batch, int64_t tokens_per_step,
             double flops_per_token, const gradsync::device::DeviceRequest& device, const std::string& precision,
             const std::string& attention, int steps, int warmup) {
  const int index = std::max(device.ordinal, 0);
  if (precision != "bf16" && precision != "fp32") {
    return Fail("--precision: expected bf16 or fp32, got \"" + precision + "\"");
  }
  auto r = gradsync::bench::RunGpuModelBench(plan, batch, tokens_per_step, index, precision == "bf16", attention, steps,
                                             warmup);
  if (!r.ok()) return Fail(std::string(r.status().message()));
  const double step_seconds = r->forward_backward_seconds + r->optimizer_seconds;
  const double tokens_per_second = static_cast<double>(tokens_per_step) / step_seconds;
  const double achieved = tokens_per_second * flops_per_token;
  std::printf("%s on %s, %s, %s attention\n", r->model.c_str(), r->gpu.c_str(), precision.c_str(), attention.c_str());
  std::printf("batch %lld tokens, %d steps after %d warmup\n", static_cast<long long>(tokens_per_step), steps, warmup);
  std::printf("step %.2f ms (forward+backward %.2f ms, clip+AdamW %.2f ms)\n", step_seconds * 1e3,
              r->forward_backward_seconds * 1e3, r->optimizer_seconds * 1e3);
  std::printf("%.0f tokens/s, %.1f TFLOP/s (%.2f MFLOP per token)\n", tokens_per_second, achieved / 1e12,
              flops_per_token / 1e6);
  std::printf("measured %s matmul peak %.1f TFLOP/s: MFU %.1f%%\n", precision.c_str(), r->peak_flops / 1e12,
              r->peak_flops > 0 ? 100.0 * achieved / r->peak_flops : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gradsync;
  const std::vector<std::string> argv_rest(argv + 1, argv + argc);
  auto args = gradsync::ParseArgs(
      "model-bench", argv_rest,
      {{"preset"}, {"set"}, {"batch"}, {"steps"}, {"warmup"}, {"threads"}, {"device"}, {"precision"}, {"attention"}});
  if (!args.ok()) return Fail(std::string(args.status().message()));
  auto batch_size = args->GetInt("batch", 8, 1, 1 << 16);
  auto steps = args->GetInt("steps", 20, 1, 1 << 20);
  auto warmup = args->GetInt("warmup", 3, 0, 1 << 20);
  auto threads = args->GetInt("threads", 1, 1, 1024);
  for (const auto* v : {&batch_size, &steps, &warmup, &threads}) {
    if (!v->ok()) return Fail(std::string(v->status().message()));
  }
  kernels::cpu::SetBlasThreads(*threads);

  const std::string preset = args->Get("preset", "gpt-tiny");
  auto spec = spec::ParseJobSpec(absl::StrFormat("model: {preset: %s}", preset), "--preset", args->GetAll("set"));
  if (!spec.ok()) return Fail(std::string(spec.status().message()));
  // Defaults only: the bench reads no data (a transformer spec without data would not validate),
  // and CreateModel checks the model section.
  spec::FillDefaults(&*spec);
  auto plan = spec::PlanModel(*spec);
  if (!plan.ok()) return Fail(std::string(plan.status().message()));
  const std::unique_ptr<nn::Model> created = nn::CreateModel(*plan);
  nn::Model& model = *created;

  // Random tokens (transformers) or random features and classes (mlp): speed does not depend
  // on the values.
  Rng rng(1);
  nn::Batch batch;
  batch.size = *batch_size;
  int64_t tokens_per_step = *batch_size;
  double flops_per_token = 0;
  if (const nn::TransformerPlan* t = plan->transformer()) {
    tokens_per_step = int64_t{*batch_size} * t->dims.seq_len;
    for (int64_t i = 0; i < tokens_per_step; ++i) {
      batch.tokens.push_back(static_cast<int32_t>(rng.Below(static_cast<uint64_t>(t->dims.vocab))));
      batch.targets.push_back(static_cast<int32_t>(rng.Below(static_cast<uint64_t>(t->dims.vocab))));
    }
    flops_per_token = nn::FlopsPerToken(t->config);
  } else {
    const nn::MlpConfig& m = *plan->mlp();
    batch.feature_dim = m.input_dim;
    for (int64_t i = 0; i < int64_t{*batch_size} * m.input_dim; ++i) {
      batch.features.push_back(static_cast<float>(rng.Normal()));
    }
    for (int i = 0; i < *batch_size; ++i) {
      batch.targets.push_back(static_cast<int32_t>(rng.Below(static_cast<uint64_t>(m.num_classes))));
    }
  }

  auto device = device::ParseDeviceRequest(args->Get("device", "cpu"), "--device");
  if (!device.ok()) return Fail(std::string(device.status().message()));
  if (device->kind == device::DeviceRequest::Kind::kAuto) {
    return Fail("--device: cpu, cuda or cuda:N (the bench runs where it is told)");
  }
  const std::string attention = args->Get("attention", "products");
  if (attention != "products" && attention != "flash" && attention != "fused") {
    return Fail("--attention: expected products, flash or fused, got \"" + attention + "\"");
  }
  if (device->kind == device::DeviceRequest::Kind::kCuda) {
    return RunOnGpu(*plan, batch, tokens_per_step, flops_per_token, *device, args->Get("precision", "bf16"), attention,
                    *steps, *warmup);
  }

  nn::AdamW adam(model.layout(), nn::AdamWConfig{.weight_decay = 0.1});
  double fb_seconds = 0, opt_seconds = 0;
  for (int step = 0; step < *warmup + *steps; ++step) {
    const absl::Time t0 = absl::Now();
    model.ZeroGrads();
    auto loss = model.ForwardBackward(batch, 1.0f / tokens_per_step, {});
    if (!loss.ok()) return Fail(std::string(loss.status().message()));
    const absl::Time t1 = absl::Now();
    adam.Step(model.params(), model.grads(), 1e-4);
    const absl::Time t2 = absl::Now();
    if (step < *warmup) continue;
    fb_seconds += absl::ToDoubleSeconds(t1 - t0);
    opt_seconds += absl::ToDoubleSeconds(t2 - t1);
  }
  const double step_seconds = (fb_seconds + opt_seconds) / *steps;
  const double tokens_per_second = tokens_per_step / step_seconds;
  std::printf("%s\n", model.Describe().c_str());
  std::printf("batch %d x %lld tokens, %d BLAS thread(s), %d steps after %d warmup\n", *batch_size,
              static_cast<long long>(tokens_per_step / *batch_size), *threads, *steps, *warmup);
  std::printf("step %.1f ms (forward+backward %.1f ms, AdamW %.1f ms)\n", step_seconds * 1e3, fb_seconds / *steps * 1e3,
              opt_seconds / *steps * 1e3);
  std::printf("%.0f tokens/s", tokens_per_second);
  if (flops_per_token > 0) {
    std::printf(", %.1f GFLOP/s (%.2f MFLOP per token)", tokens_per_second * flops_per_token / 1e9,
                flops_per_token / 1e6);
  }
  std::printf("\n");
  // Equal on two machines only where BLAS rounded alike in every step: scripts/numerics-check.sh
  // --survey groups OpenBLAS's kernels by it.
  std::printf("parameters %s\n", gradsync::DigestString(std::as_bytes(model.params())).c_str());
  return 0;
}
