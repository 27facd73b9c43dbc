// gradsync model describe: a transformer preset's dimensions, parameter count and FLOPs per
// token, with --set overrides relative to the model spec. Needs no cluster.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "args.h"
#include "commands.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/nn/presets.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::cli {
namespace {

constexpr char kUsage[] =
    "usage: gradsync model describe PRESET [--set path=value ...] [-o json]\n"
    "  PRESET: gpt-tiny, gpt2-124m or minimind-26m. --set paths are relative to the model\n"
    "  spec, e.g. --set transformer.layers=6 --set transformer.flavour=llama.\n";

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

}  // namespace

int ModelCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseArgs("model", argv, {{"set"}, {"output", true, 'o'}});
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", kUsage));
  if (args->positional.size() != 2 || args->positional[0] != "describe") {
    return Fail(kUsage);
  }
  const std::string output = args->Get("output", "text");
  if (output != "text" && output != "json") {
    return Fail(absl::StrCat("-o: expected text or json, got \"", output, "\""));
  }
  const std::string& preset = args->positional[1];
  absl::StatusOr<v1::TransformerConfig> config = Resolve(preset, args->GetAll("set"));
  if (!config.ok()) return Fail(std::string(config.status().message()));
  const std::string text = output == "json" ? Json(preset, *config) + "\n" : Text(preset, *config);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace gradsync::cli
