// gradsync generate: text sampled from a trained transformer's weights file, one byte token at a
// time over a sliding window of the model's context (no key/value cache: each token runs the
// whole window forward). Needs no cluster.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "args.h"
#include "commands.h"
#include "gradsync/ckpt/weights_file.h"
#include "gradsync/core/rng.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/presets.h"

namespace gradsync::cli {
namespace {

constexpr char kUsage[] =
    "usage: gradsync generate --weights PATH --prompt TEXT [--tokens N] [--temperature T]\n"
    "                         [--top-k K] [--seed S]\n"
    "  Prints TEXT and N (default 200) bytes sampled from a transformer's weights file.\n"
    "  T: softmax temperature (default 0.8; 0 picks the likeliest byte). K: sample among the K\n"
    "  likeliest bytes only (default 0: all). The same S (default 0) gives the same text.\n";
constexpr int kByteVocab = 256;

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return code;
}

struct SamplingOptions {
  double temperature = 0.8;
  int top_k = 0;
};

absl::StatusOr<SamplingOptions> ParseSampling(const Args& args) {
  SamplingOptions options;
  if (args.Has("temperature")) {
    const std::string text = args.Get("temperature");
    if (!absl::SimpleAtod(text, &options.temperature) || !std::isfinite(options.temperature) ||
        options.temperature < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--temperature: expected a finite number at least 0, got \"", text, "\""));
    }
  }
  absl::StatusOr<int> top_k = args.GetInt("top-k", 0, 0, kByteVocab);
  if (!top_k.ok()) return top_k.status();
  options.top_k = *top_k;
  return options;
}

struct LoadedModel {
  std::unique_ptr<nn::Model> model;
  int context = 0;  // the longest window the model reads (seqLen)
};

// The model the file describes, holding the file's values. The layout the model builds must be
// the file's, parameter for parameter.
absl::StatusOr<LoadedModel> LoadModel(const std::string& path) {
  absl::StatusOr<ckpt::WeightsFile> file = ckpt::LoadWeights(path);
  if (!file.ok()) return file.status();
  if (!nn::IsTransformerPreset(file->model.preset())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": holds a model of preset \"", file->model.preset(),
                                                   "\"; gradsync generate needs a transformer's weights"));
  }
  // Files hold the resolved network; resolving again also covers a spec that names only a preset.
  absl::StatusOr<v1::TransformerConfig> config = nn::ResolveTransformerConfig(file->model);
  if (!config.ok()) return config.status();
  if (config->vocab_size() != kByteVocab) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the model's vocabulary has ", config->vocab_size(),
                     " tokens; gradsync generate reads and writes bytes (vocabulary 256)"));
  }
  v1::JobSpec spec;
  *spec.mutable_model() = file->model;
  absl::StatusOr<std::unique_ptr<nn::Model>> model = nn::CreateModel(spec);
  if (!model.ok()) return model.status();
  const nn::ParamLayout& want = (*model)->layout();
  const nn::ParamLayout& got = file->layout;
  for (int i = 0; i < std::max(want.size(), got.size()); ++i) {
    if (i >= want.size() || i >= got.size() || want.param(i).name != got.param(i).name ||
        want.param(i).shape != got.param(i).shape) {
      const auto describe = [i](const nn::ParamLayout& l) {
        return i < l.size() ? absl::StrCat(l.param(i).name, " [", absl::StrJoin(l.param(i).shape, ", "), "]")
                            : std::string("nothing");
      };
      return absl::InvalidArgumentError(absl::StrCat(path, ": parameter ", i, " is ", describe(got),
                                                     " but the model its spec describes has ", describe(want)));
    }
  }
  if (want.Hash() != got.Hash() || file->values.size() != (*model)->params().size()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": its parameter layout differs from the model's"));
  }
  std::copy(file->values.begin(), file->values.end(), (*model)->params().begin());
  return LoadedModel{*std::move(model), config->seq_len()};
}

// One token from `logits` (one row of vocabulary size): the likeliest when temperature is 0,
// else a draw from softmax(logits / temperature) restricted to the top_k likeliest (ties go to
// the lower token, so the result depends only on the logits and `rng`).
int SampleToken(std::span<const float> logits, const SamplingOptions& options, Rng* rng) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  if (options.temperature == 0) return order[0];
  const size_t keep = options.top_k > 0 ? std::min<size_t>(options.top_k, order.size()) : order.size();
  std::vector<double> weights(keep);
  const double top = logits[order[0]];
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    weights[i] = std::exp((static_cast<double>(logits[order[i]]) - top) / options.temperature);
    total += weights[i];
  }
  double u = rng->Uniform() * total;
  for (size_t i = 0; i < keep; ++i) {
    u -= weights[i];
    if (u < 0) return order[i];
  }
  return order[keep - 1];
}

}  // namespace

int GenerateCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args =
      ParseArgs("generate", argv, {{"weights"}, {"prompt"}, {"tokens"}, {"temperature"}, {"top-k"}, {"seed"}});
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", kUsage));
  if (!args->positional.empty() || !args->Has("weights") || !args->Has("prompt")) return Fail(kUsage);
  const std::string prompt = args->Get("prompt");
  if (prompt.empty()) return Fail("--prompt: must not be empty (generation continues a text)");
  absl::StatusOr<int> tokens = args->GetInt("tokens", 200, 0, 1 << 20);
  if (!tokens.ok()) return Fail(std::string(tokens.status().message()));
  absl::StatusOr<SamplingOptions> sampling = ParseSampling(*args);
  if (!sampling.ok()) return Fail(std::string(sampling.status().message()));
  uint64_t seed = 0;
  if (args->Has("seed") && !absl::SimpleAtoi(args->Get("seed"), &seed)) {
    return Fail(absl::StrCat("--seed: expected an unsigned integer, got \"", args->Get("seed"), "\""));
  }

  absl::StatusOr<LoadedModel> loaded = LoadModel(args->Get("weights"));
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()), 1);
  nn::Model& model = *loaded->model;
  const int context = loaded->context;

  std::vector<int32_t> text;
  for (unsigned char c : prompt) text.push_back(c);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  Rng rng(seed);
  nn::Batch batch;
  batch.size = 1;
  for (int i = 0; i < *tokens; ++i) {
    const size_t window = std::min<size_t>(text.size(), static_cast<size_t>(context));
    batch.tokens.assign(text.end() - static_cast<std::ptrdiff_t>(window), text.end());
    absl::StatusOr<std::vector<float>> logits = model.Predict(batch);
    if (!logits.ok()) return Fail(absl::StrCat("\ngenerating failed: ", logits.status().message()), 1);
    const std::span<const float> last = std::span<const float>(*logits).last(kByteVocab);
    const int next = SampleToken(last, *sampling, &rng);
    text.push_back(next);
    std::fputc(next, stdout);
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace gradsync::cli
