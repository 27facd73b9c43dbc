// gradsync model describe: a transformer preset's dimensions, parameter count and FLOPs per
// token, with --set overrides relative to the model spec. gradsync model params: the names and
// shapes of a model's parameters (what ddp.ignoreParams names) and its buffers. gradsync model logits: the logits a
// model's weights give for fixed tokens, for comparisons with other frameworks. Need no cluster.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/ckpt/interchange.h"
#include "gradsync/core/args.h"
#include "gradsync/nn/model.h"
#include "gradsync/nn/presets.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/spec/job_spec.h"
#include "output_format.h"
#include "spec_input.h"

namespace gradsync::cli {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

// The resolved and validated configuration of `preset` with `overrides` ("transformer.x=v").
absl::StatusOr<v1::TransformerConfig> Resolve(const std::string& preset, const std::vector<std::string>& overrides) {
  if (!nn::IsTransformerPreset(preset)) {
    std::vector<std::string> presets(nn::ModelPresetNames().begin() + 1, nn::ModelPresetNames().end());
    return absl::InvalidArgumentError(
        absl::StrCat("gradsync model describe: \"", preset,
                     "\" is not a transformer preset; known: ", absl::StrJoin(presets, ", ")));
  }
  std::vector<std::string> full;
  for (const std::string& o : overrides) full.push_back(absl::StrCat("model.", o));
  v1::JobSpec empty;
  empty.mutable_model()->set_preset(preset);
  absl::StatusOr<v1::JobSpec> spec = spec::ParseJobSpec(spec::ToJson(empty), "--set", full);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<v1::TransformerConfig> config = nn::ResolveTransformerConfig(spec->model());
  if (!config.ok()) return config.status();
  if (absl::Status s = nn::ValidateTransformerConfig(*config); !s.ok()) return s;
  return config;
}

std::string Json(const std::string& preset, const v1::TransformerConfig& c) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  f["preset"].set_string_value(preset);
  f["flavour"].set_string_value(c.flavour());
  f["layers"].set_number_value(c.layers());
  f["heads"].set_number_value(c.heads());
  f["kvHeads"].set_number_value(c.kv_heads());
  f["headDim"].set_number_value(c.width() / c.heads());
  f["width"].set_number_value(c.width());
  f["mlpWidth"].set_number_value(c.mlp_width());
  f["seqLen"].set_number_value(c.seq_len());
  f["vocabSize"].set_number_value(c.vocab_size());
  f["ropeTheta"].set_number_value(c.rope_theta());
  f["normEps"].set_number_value(c.norm_eps());
  f["params"].set_number_value(static_cast<double>(nn::NumParams(c)));
  f["flopsPerToken"].set_number_value(nn::FlopsPerToken(c));
  f["summary"].set_string_value(nn::DescribeTransformer(c));
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(s, &out, options);
  return out;
}

std::string Text(const std::string& preset, const v1::TransformerConfig& c) {
  std::string out = absl::StrCat(preset, ": ", nn::DescribeTransformer(c), "\n");
  auto row = [&out](const char* name, const std::string& value) {
    absl::StrAppend(&out, absl::StrFormat("  %-14s %s\n", name, value));
  };
  row("flavour", c.flavour());
  row("layers", absl::StrCat(c.layers()));
  row("heads", absl::StrCat(c.heads()));
  row("kvHeads", absl::StrCat(c.kv_heads()));
  row("headDim", absl::StrCat(c.width() / c.heads()));
  row("width", absl::StrCat(c.width()));
  row("mlpWidth", absl::StrCat(c.mlp_width()));
  row("seqLen", absl::StrCat(c.seq_len()));
  row("vocabSize", absl::StrCat(c.vocab_size()));
  row("ropeTheta", c.rope_theta() == 0 ? "- (learned positions)" : absl::StrCat(c.rope_theta()));
  row("normEps", absl::StrCat(c.norm_eps()));
  row("params", absl::StrCat(nn::NumParams(c)));
  row("flopsPerToken", absl::StrFormat("%.4g (6N + 12 L C T, forward + backward)", nn::FlopsPerToken(c)));
  return out;
}

absl::StatusOr<std::vector<int32_t>> ParseTokens(const std::string& text) {
  std::vector<int32_t> tokens;
  for (absl::string_view piece : absl::StrSplit(text, ',')) {
    int32_t t = 0;
    if (!absl::SimpleAtoi(piece, &t) || t < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tokens: expected token ids separated by commas, got \"", piece, "\""));
    }
    tokens.push_back(t);
  }
  return tokens;
}

// The weights at `path` with the model they describe, or the model --preset and --set name.
absl::StatusOr<ckpt::WeightsFile> LoadWeights(const std::string& path, const Args& args) {
  if (!args.Has("preset")) return ckpt::ReadModelWeights(path);
  absl::StatusOr<v1::TransformerConfig> config = Resolve(args.Get("preset"), args.GetAll("set"));
  if (!config.ok()) return config.status();
  ckpt::WeightsFile w;
  w.model.set_preset(args.Get("preset"));
  *w.model.mutable_transformer() = *config;
  absl::StatusOr<nn::ParamLayout> layout = ckpt::TransformerLayout(w.model);
  if (!layout.ok()) return layout.status();
  w.layout = *std::move(layout);
  absl::StatusOr<ckpt::ImportedWeights> imported = ckpt::ImportWeights(path, w.model, w.layout);
  if (!imported.ok()) return imported.status();
  w.values = std::move(imported->params);
  return w;
}

int Logits(const Args& args) {
  if (args.positional.size() != 2 || !args.Has("tokens")) return Fail(GroupUsage("model"));
  absl::StatusOr<std::vector<int32_t>> tokens = ParseTokens(args.Get("tokens"));
  if (!tokens.ok()) return Fail(std::string(tokens.status().message()));
  absl::StatusOr<ckpt::WeightsFile> w = LoadWeights(args.positional[1], args);
  if (!w.ok()) return Fail(std::string(w.status().message()));
  v1::JobSpec spec;
  *spec.mutable_model() = w->model;
  absl::StatusOr<nn::ModelPlan> plan = spec::PlanModel(spec);
  if (!plan.ok()) return Fail(std::string(plan.status().message()));
  const std::unique_ptr<nn::Model> model = nn::CreateModel(*plan);
  if (model->layout().Hash() != w->layout.Hash()) return Fail("the weights' layout is not their model's");
  std::copy(w->values.begin(), w->values.end(), model->params().begin());
  nn::Batch batch;
  batch.size = 1;
  batch.tokens = *tokens;
  absl::StatusOr<std::vector<float>> logits = model->Predict(batch);
  if (!logits.ok()) return Fail(std::string(logits.status().message()));
  const size_t vocab = logits->size() / tokens->size();
  std::string out = absl::StrCat("{\"vocab\": ", vocab, ", \"logits\": [");
  for (size_t t = 0; t < tokens->size(); ++t) {
    absl::StrAppend(&out, t > 0 ? ",\n" : "\n", "[");
    for (size_t v = 0; v < vocab; ++v)
      absl::StrAppendFormat(&out, "%s%.9g", v > 0 ? "," : "", (*logits)[t * vocab + v]);
    out += "]";
  }
  out += "]}\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

int ModelLogitsCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("model logits", argv);
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", GroupUsage("model")));
  return Logits(*args);
}

// The model `what` names: a job spec file (with `overrides` as --set gives them to submit), or a
// transformer preset (overrides relative to the model, as describe takes them).
absl::StatusOr<nn::ModelPlan> ModelNamed(const std::string& what, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(what, ec)) {
    absl::StatusOr<v1::JobSpec> spec = LoadSpecFromCommandLine(what, overrides, 0);
    if (!spec.ok()) return spec.status();
    return spec::PlanModel(*spec);
  }
  absl::StatusOr<v1::TransformerConfig> config = Resolve(what, overrides);
  if (!config.ok()) return config.status();
  v1::JobSpec spec;
  spec.mutable_model()->set_preset(what);
  *spec.mutable_model()->mutable_transformer() = *config;
  return spec::PlanModel(spec);
}

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrJoin(shape, "x"); }

std::string ParamsText(const std::string& what, const nn::ModelPlan& plan) {
  const nn::ParamLayout layout = plan.Layout();
  std::string out = absl::StrFormat(
      "%s: %d parameters in %d tensors. ddp.ignoreParams takes these names, or a prefix ending in \".\"\n", what,
      static_cast<long long>(layout.total_numel()), layout.size());
  size_t width = 4;
  for (const nn::ParamInfo& p : layout.params()) width = std::max(width, p.name.size());
  absl::StrAppend(&out, absl::StrFormat("%-*s  %-14s %s\n", static_cast<int>(width), "NAME", "SHAPE", "NUMEL"));
  for (const nn::ParamInfo& p : layout.params()) {
    absl::StrAppend(&out, absl::StrFormat("%-*s  %-14s %d\n", static_cast<int>(width), p.name, ShapeText(p.shape),
                                          static_cast<long long>(p.numel)));
  }
  const std::vector<std::string> buffers = plan.BufferNames();
  if (!buffers.empty()) {
    absl::StrAppend(&out, "buffers (computed alike on every rank, never synchronised; ddp.ignoreParams accepts them):\n");
    for (const std::string& b : buffers) absl::StrAppend(&out, "  ", b, "\n");
  }
  return out;
}

std::string ParamsJson(const nn::ModelPlan& plan) {
  google::protobuf::Struct s;
  auto& f = *s.mutable_fields();
  auto& params = *f["params"].mutable_list_value();
  const nn::ParamLayout layout = plan.Layout();
  for (const nn::ParamInfo& p : layout.params()) {
    auto& entry = *params.add_values()->mutable_struct_value()->mutable_fields();
    entry["name"].set_string_value(p.name);
    for (int64_t d : p.shape) entry["shape"].mutable_list_value()->add_values()->set_number_value(static_cast<double>(d));
    entry["numel"].set_number_value(static_cast<double>(p.numel));
  }
  auto& buffers = *f["buffers"].mutable_list_value();
  for (const std::string& b : plan.BufferNames()) buffers.add_values()->set_string_value(b);
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(s, &out, options);
  return out;
}

// `gradsync model NAME THING [--set ...] [-o F]`: prints what `show` makes of THING, the --set
// overrides and the format, or fails (exit 2) with the group's usage.
int ModelSubcommand(const std::string& name, const std::vector<std::string>& argv,
                    const std::function<absl::StatusOr<std::string>(const std::string& thing,
                                                                    const std::vector<std::string>& sets,
                                                                    OutputFormat format)>& show) {
  absl::StatusOr<Args> args = ParseCommandArgs(name, argv);
  const std::string usage = GroupUsage("model");
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", usage));
  absl::StatusOr<OutputFormat> format = OutputFormatOf(name, *args);
  if (!format.ok()) return Fail(std::string(format.status().message()));
  if (args->positional.size() != 2) return Fail(usage);
  absl::StatusOr<std::string> text = show(args->positional[1], args->GetAll("set"), *format);
  if (!text.ok()) return Fail(std::string(text.status().message()));
  std::fputs(text->c_str(), stdout);
  return 0;
}

int ModelParamsCommand(const std::vector<std::string>& argv) {
  return ModelSubcommand("model params", argv,
                         [](const std::string& what, const std::vector<std::string>& sets,
                            OutputFormat format) -> absl::StatusOr<std::string> {
                           absl::StatusOr<nn::ModelPlan> plan = ModelNamed(what, sets);
                           if (!plan.ok()) return plan.status();
                           return format == OutputFormat::kTable ? ParamsText(what, *plan)
                                                                 : InFormat(ParamsJson(*plan), format);
                         });
}

int ModelDescribeCommand(const std::vector<std::string>& argv) {
  return ModelSubcommand("model describe", argv,
                         [](const std::string& preset, const std::vector<std::string>& sets,
                            OutputFormat format) -> absl::StatusOr<std::string> {
                           absl::StatusOr<v1::TransformerConfig> config = Resolve(preset, sets);
                           if (!config.ok()) return config.status();
                           return format == OutputFormat::kTable ? Text(preset, *config)
                                                                 : InFormat(Json(preset, *config), format);
                         });
}

}  // namespace

int ModelCommand(const std::vector<std::string>& argv) { return RunSubcommand("model", argv); }

// Its rows of the command table (command_table.h).
std::vector<Command> ModelRows() {
  using F = OutputFormat;
  std::vector<Command> t;
  t.push_back({.name = "model describe",
               .synopsis = "PRESET [--set transformer.x=v ...]",
               .summary = "a transformer preset's dimensions, parameters and FLOPs per token",
               .example = "gradsync model describe gpt-tiny --set transformer.layers=6",
               .details = "PRESET: gpt-tiny, gpt2-124m or minimind-26m. --set paths are relative to the model spec,\n"
                          "e.g. --set transformer.flavour=llama.\n",
               .options = {{"set", "path=value"}, Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kWords,
               .words = {"gpt-tiny", "gpt2-124m", "minimind-26m"},
               .run = ModelDescribeCommand});
  t.push_back({.name = "model params",
               .synopsis = "PRESET|SPEC [--set path=value ...]",
               .summary = "the names, shapes and sizes of a model's parameters, and its buffers",
               .example = "gradsync model params minimind-26m",
               .details = "PRESET as for describe (--set relative to the model spec), or a job spec file (--set as\n"
                          "submit takes it). The names are those ddp.ignoreParams, weights files and checkpoints use.\n",
               .options = {{"set", "path=value"}, Output()},
               .formats = {F::kTable, F::kJson, F::kYaml},
               .operands = Operands::kFiles,
               .run = ModelParamsCommand});
  t.push_back({.name = "model logits",
               .synopsis = "WEIGHTS --tokens ID,... [--preset P] [--set path=value ...]",
               .summary = "the logits of fixed tokens, as JSON (comparisons with other frameworks)",
               .example = "gradsync model logits weights.bin --tokens 1,2,3",
               .details = "WEIGHTS is anything model.initFrom reads; --preset names the model when the file does\n"
                          "not (a safetensors file from elsewhere). Prints {\"vocab\": V, \"logits\": [[V values] per\n"
                          "token]} with every float exactly (9 significant digits).\n",
               .options = {{"tokens", "ID,..."}, {"preset", "P"}, {"set", "path=value"}},
               .operands = Operands::kFiles,
               .run = ModelLogitsCommand});
  return t;
}

}  // namespace gradsync::cli
