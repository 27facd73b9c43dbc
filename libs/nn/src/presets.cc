#include "gradsync/nn/presets.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gradsync/nn/model_config.h"

namespace gradsync::nn {
namespace {

using gradsync::v1::TransformerConfig;

constexpr double kDefaultLlamaRopeTheta = 10000.0;

constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxWidth = 65536;
constexpr int64_t kMaxMlpWidth = int64_t{1} << 20;
constexpr int64_t kMaxSeqLen = int64_t{1} << 16;
constexpr int64_t kMaxVocab = int64_t{1} << 20;

struct Preset {
  const char* name;
  Flavour flavour;
  int32_t layers, heads, kv_heads, width, mlp_width, seq_len, vocab_size;
  double rope_theta, norm_eps;
};

// kv_heads 0: as many as heads. rope_theta 0: not used (gpt2 flavour).
constexpr Preset kPresets[] = {
    {"gpt-tiny", Flavour::kGpt2, 4, 4, 0, 128, 512, 128, 256, 0.0, 1e-5},
    {"gpt2-124m", Flavour::kGpt2, 12, 12, 0, 768, 3072, 1024, 50257, 0.0, 1e-5},
    {"minimind-26m", Flavour::kLlama, 8, 8, 2, 512, 1408, 512, 256, 1e6, 1e-5},
};

const Preset* FindPreset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

std::string Path(const char* field) { return absl::StrCat("model.transformer.", field); }

absl::Status Bad(const char* field, const std::string& problem, const std::string& got) {
  return absl::InvalidArgumentError(absl::StrCat(Path(field), ": ", problem, ", got ", got));
}

absl::Status CheckRange(const char* field, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return Bad(field, absl::StrCat("must be between ", min, " and ", max), absl::StrCat(value));
}

std::string FormatParams(int64_t n) {
  if (n < 1000) return absl::StrCat(n, " params");
  if (n < 100000) return absl::StrFormat("%.0fK params", n / 1e3);
  if (n < 10000000) return absl::StrFormat("%.2fM params", n / 1e6);
  if (n < 1000000000) return absl::StrFormat("%.1fM params", n / 1e6);
  return absl::StrFormat("%.2fB params", n / 1e9);
}

}  // namespace

const std::vector<std::string>& ModelPresetNames() {
  static const std::vector<std::string>* const names = [] {
    auto* v = new std::vector<std::string>{"mlp"};
    for (const Preset& p : kPresets) v->push_back(p.name);
    return v;
  }();
  return *names;
}

bool IsTransformerPreset(const std::string& preset) { return FindPreset(preset) != nullptr; }

absl::StatusOr<TransformerConfig> ResolveTransformerConfig(const gradsync::v1::ModelSpec& model) {
  const Preset* p = FindPreset(model.preset());
  if (p == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.preset: \"", model.preset(),
                     "\" is not a transformer preset; known: ", absl::StrJoin(ModelPresetNames(), ", ")));
  }
  const TransformerConfig& set = model.transformer();
  TransformerConfig c;
  c.set_flavour(set.flavour().empty() ? FlavourName(p->flavour) : set.flavour());
  c.set_layers(set.layers() != 0 ? set.layers() : p->layers);
  c.set_heads(set.heads() != 0 ? set.heads() : p->heads);
  c.set_kv_heads(set.kv_heads() != 0 ? set.kv_heads() : p->kv_heads);
  if (c.kv_heads() == 0) c.set_kv_heads(c.heads());
  c.set_width(set.width() != 0 ? set.width() : p->width);
  c.set_mlp_width(set.mlp_width() != 0 ? set.mlp_width() : p->mlp_width);
  c.set_seq_len(set.seq_len() != 0 ? set.seq_len() : p->seq_len);
  c.set_vocab_size(set.vocab_size() != 0 ? set.vocab_size() : p->vocab_size);
  double theta = 0.0;
  // An unknown flavour is left for ValidateTransformerConfig to name.
  const absl::StatusOr<Flavour> flavour = ParseFlavour(c.flavour());
  if (flavour.ok() && *flavour == Flavour::kLlama) {
    theta = p->rope_theta != 0.0 ? p->rope_theta : kDefaultLlamaRopeTheta;
  }
  c.set_rope_theta(set.rope_theta() != 0.0 ? set.rope_theta() : theta);
  c.set_norm_eps(set.norm_eps() != 0.0 ? set.norm_eps() : p->norm_eps);
  return c;
}

absl::Status ValidateTransformerConfig(const TransformerConfig& c) {
  const absl::StatusOr<Flavour> flavour = ParseFlavour(c.flavour());
  if (!flavour.ok()) return flavour.status();
  const bool llama = *flavour == Flavour::kLlama;
  if (absl::Status s = CheckRange("layers", c.layers(), 1, kMaxLayers); !s.ok()) return s;
  if (absl::Status s = CheckRange("heads", c.heads(), 1, kMaxHeads); !s.ok()) return s;
  if (absl::Status s = CheckRange("kvHeads", c.kv_heads(), 1, c.heads()); !s.ok()) return s;
  if (c.heads() % c.kv_heads() != 0) {
    return Bad("kvHeads", absl::StrCat("must divide heads (", c.heads(), ")"), absl::StrCat(c.kv_heads()));
  }
  if (absl::Status s = CheckRange("width", c.width(), 1, kMaxWidth); !s.ok()) return s;
  if (c.width() % c.heads() != 0) {
    return Bad("width", absl::StrCat("must be a multiple of heads (", c.heads(), ")"), absl::StrCat(c.width()));
  }
  if (llama && (c.width() / c.heads()) % 2 != 0) {
    return Bad("width", "must give an even head dimension (width / heads) for rotary embeddings",
               absl::StrCat(c.width(), " (head dimension ", c.width() / c.heads(), ")"));
  }
  if (absl::Status s = CheckRange("mlpWidth", c.mlp_width(), 1, kMaxMlpWidth); !s.ok()) return s;
  if (absl::Status s = CheckRange("seqLen", c.seq_len(), 1, kMaxSeqLen); !s.ok()) return s;
  if (absl::Status s = CheckRange("vocabSize", c.vocab_size(), 2, kMaxVocab); !s.ok()) return s;
  if (llama && !(std::isfinite(c.rope_theta()) && c.rope_theta() > 0.0)) {
    return Bad("ropeTheta", "must be a finite number greater than 0", absl::StrCat(c.rope_theta()));
  }
  if (!llama && c.rope_theta() != 0.0) {
    return Bad("ropeTheta", "is only used by the llama flavour; leave it unset for gpt2", absl::StrCat(c.rope_theta()));
  }
  if (!(std::isfinite(c.norm_eps()) && c.norm_eps() > 0.0 && c.norm_eps() <= 1.0)) {
    return Bad("normEps", "must be a finite number greater than 0 and at most 1", absl::StrCat(c.norm_eps()));
  }
  return absl::OkStatus();
}

int64_t NumParams(const TransformerDims& d) {
  const bool gpt2 = d.gpt2();
  const int64_t C = d.width, M = d.mlp_width, V = d.vocab, T = d.seq_len, Q = d.qkv_width;
  int64_t block = Q * C + C * C + d.fc_width * C + M * C;  // matrices
  block += gpt2 ? 2 * (2 * C) : 2 * C;                     // norms
  if (gpt2) block += Q + C + M + C;                        // biases
  const int64_t embeddings = V * C + (gpt2 ? T * C : 0);
  const int64_t final_norm = gpt2 ? 2 * C : C;
  return embeddings + d.layers * block + final_norm;
}

int64_t NumParams(const TransformerConfig& c) { return NumParams(TransformerDims::FromValidConfig(c)); }

double FlopsPerToken(const TransformerConfig& c) {
  const TransformerDims d = TransformerDims::FromValidConfig(c);
  const int64_t positions = d.gpt2() ? d.seq_len * d.width : 0;
  const double n = static_cast<double>(NumParams(d) - positions);
  return 6.0 * n + 12.0 * d.layers * static_cast<double>(d.width) * d.seq_len;
}

std::string DescribeTransformer(const TransformerDims& d) {
  std::string kv = d.kv_heads == d.heads ? "" : absl::StrCat(" KV", d.kv_heads);
  return absl::StrCat(FlavourName(d.flavour), " L", d.layers, " H", d.heads, kv, " C", d.width, " M", d.mlp_width, " T",
                      d.seq_len, " V", d.vocab, ", ", FormatParams(NumParams(d)));
}

std::string DescribeTransformer(const TransformerConfig& c) {
  return DescribeTransformer(TransformerDims::FromValidConfig(c));
}

}  // namespace gradsync::nn
