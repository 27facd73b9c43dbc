// gradsync generate: text sampled from a trained transformer's weights, one token (a byte, or a
// tokenizer's id) at a time over a sliding window of the model's context (no key/value cache:
// each token runs the whole window forward). Needs no cluster.
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
#include "absl/strings/strip.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/core/args.h"
#include "gradsync/core/rng.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/presets.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/tokenizer/tokenizer.h"

namespace gradsync::cli {
namespace {

// The usage lines from the command table, for errors.
std::string Usage() { return std::string(absl::StripSuffix(GroupUsage("generate"), "\n")); }

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
  absl::StatusOr<int> top_k = args.GetInt("top-k", 0, 0, 1 << 30);
  if (!top_k.ok()) return top_k.status();
  options.top_k = *top_k;
  return options;
}

struct LoadedModel {
  std::unique_ptr<nn::Model> model;
  int context = 0;  // the longest window the model reads (seqLen)
  int vocab = 0;    // logits per position
};

// The model the weights describe, holding their values. The layout the model builds must be the
// file's, parameter for parameter.
// `tokenizer` (`what` names it) must have the model's vocabulary.
absl::StatusOr<LoadedModel> LoadModel(const std::string& path, const tokenizer::Tokenizer& tokenizer,
                                      const std::string& what) {
  absl::StatusOr<ckpt::WeightsFile> file = ckpt::ReadModelWeights(path);
  if (!file.ok()) return file.status();
  if (!nn::IsTransformerPreset(file->model.preset())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": holds a model of preset \"", file->model.preset(),
                                                   "\"; gradsync generate needs a transformer's weights"));
  }
  // Files hold the resolved network; planning also covers a spec that names only a preset.
  v1::JobSpec spec;
  *spec.mutable_model() = file->model;
  absl::StatusOr<nn::ModelPlan> plan = spec::PlanModel(spec);
  if (!plan.ok()) return plan.status();
  const nn::TransformerDims& dims = plan->transformer()->dims;
  if (dims.vocab != tokenizer.vocab_size()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the model's vocabulary has ", dims.vocab, " tokens but ",
                                                   what, " has ", tokenizer.vocab_size(),
                                                   "; pass --tokenizer with the tokenizer the model was trained with"));
  }
  std::unique_ptr<nn::Model> model = nn::CreateModel(*plan);
  const nn::ParamLayout& want = model->layout();
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
  if (want.Hash() != got.Hash() || file->values.size() != model->params().size()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": its parameter layout differs from the model's"));
  }
  std::copy(file->values.begin(), file->values.end(), model->params().begin());
  return LoadedModel{std::move(model), static_cast<int>(dims.seq_len), static_cast<int>(dims.vocab)};
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

// Prints the text `ids` continue `printed` bytes into: the decoding of everything so far, less
// what was printed. Decoding the whole sequence (not the new token alone) keeps SentencePiece's
// word-initial spaces and byte-level tokens that complete a UTF-8 character right.
absl::Status PrintNew(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& ids, size_t* printed) {
  absl::StatusOr<std::string> text = tokenizer.Decode(ids);
  if (!text.ok()) return text.status();
  if (text->size() > *printed) std::fwrite(text->data() + *printed, 1, text->size() - *printed, stdout);
  *printed = std::max(*printed, text->size());
  std::fflush(stdout);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> LoadTokenizer(const Args& args) {
  if (!args.Has("tokenizer")) return tokenizer::MakeByteTokenizer();
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t = tokenizer::LoadTokenizer(args.Get("tokenizer"));
  if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat("--tokenizer: ", t.status().message()));
  return t;
}

}  // namespace

int GenerateCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("generate", argv);
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", Usage()));
  if (!args->positional.empty() || !args->Has("weights") || !args->Has("prompt")) return Fail(Usage());
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

  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = LoadTokenizer(*args);
  if (!tok.ok()) return Fail(std::string(tok.status().message()), 1);
  const std::string what = args->Has("tokenizer") ? absl::StrCat("the tokenizer ", args->Get("tokenizer"))
                                                  : std::string("gradsync generate without --tokenizer (bytes)");
  absl::StatusOr<LoadedModel> loaded = LoadModel(args->Get("weights"), **tok, what);
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()), 1);
  nn::Model& model = *loaded->model;
  const int context = loaded->context;

  absl::StatusOr<std::vector<int32_t>> encoded = (*tok)->Encode(prompt);
  if (!encoded.ok()) return Fail(absl::StrCat("--prompt: ", encoded.status().message()), 1);
  if (encoded->empty()) return Fail("--prompt: the tokenizer gives it no tokens");
  std::vector<int32_t> text = *std::move(encoded);
  // The prompt as given; the continuation is what decoding adds to the prompt's own decoding.
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  absl::StatusOr<std::string> prompt_decoded = (*tok)->Decode(text);
  if (!prompt_decoded.ok()) return Fail(std::string(prompt_decoded.status().message()), 1);
  size_t printed = prompt_decoded->size();
  Rng rng(seed);
  nn::Batch batch;
  batch.size = 1;
  for (int i = 0; i < *tokens; ++i) {
    const size_t window = std::min<size_t>(text.size(), static_cast<size_t>(context));
    batch.tokens.assign(text.end() - static_cast<std::ptrdiff_t>(window), text.end());
    absl::StatusOr<std::vector<float>> logits = model.Predict(batch);
    if (!logits.ok()) return Fail(absl::StrCat("\ngenerating failed: ", logits.status().message()), 1);
    const std::span<const float> last = std::span<const float>(*logits).last(static_cast<size_t>(loaded->vocab));
    text.push_back(SampleToken(last, *sampling, &rng));
    if (absl::Status s = PrintNew(**tok, text, &printed); !s.ok()) return Fail(absl::StrCat("\n", s.message()), 1);
  }
  std::fputc('\n', stdout);
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> GenerateRows() {
  std::vector<Command> t;
  t.push_back({.name = "generate",
               .synopsis = "--weights PATH --prompt TEXT [--tokenizer TOK] [--tokens N] [--temperature T]\n"
                           "    [--top-k K] [--seed S]",
               .summary = "continue TEXT with tokens sampled from a trained transformer",
               .example = "gradsync generate --weights weights.bin --prompt 'Once upon a time' --tokens 100",
               .details = "PATH: a weights file, a committed checkpoint directory or an export. N tokens (default\n"
                          "200); T: softmax temperature (default 0.8; 0 picks the likeliest token); K: sample among\n"
                          "the K likeliest tokens only (default 0: all); the same S (default 0) gives the same text.\n"
                          "TOK: the tokenizer the model was trained with (tokenizer.json, GPT-2's encoder.json +\n"
                          "vocab.bpe or their directory, a SentencePiece .model); without it tokens are bytes.\n",
               .options = {{"weights", "PATH"},
                           {"prompt", "TEXT"},
                           {"tokenizer", "TOK"},
                           {"tokens", "N"},
                           {"temperature", "T"},
                           {"top-k", "K"},
                           {"seed", "S"}},
               .run = GenerateCommand});
  return t;
}

}  // namespace gradsync::cli
