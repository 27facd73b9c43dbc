#include "gradsync/nn/presets.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace gradsync::nn {
namespace {

using gradsync::v1::TransformerConfig;

constexpr char kGpt2[] = "gpt2";
constexpr char kLlama[] = "llama";
constexpr double kDefaultLlamaRopeTheta = 10000.0;

constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxWidth = 65536;
constexpr int64_t kMaxMlpWidth = int64_t{1} << 20;
constexpr int64_t kMaxSeqLen = int64_t{1} << 16;
constexpr int64_t kMaxVocab = int64_t{1} << 20;

struct Preset {
  const char* name;
  const char* flavour;
  int32_t layers, heads, kv_heads, width, mlp_width, seq_len, vocab_size;
  double rope_theta, norm_eps;
};

// kv_heads 0: as many as heads. rope_theta 0: not used (gpt2 flavour).
constexpr Preset kPresets[] = {
    {"gpt-tiny", kGpt2, 4, 4, 0, 128, 512, 128, 256, 0.0, 1e-5},
    {"gpt2-124m", kGpt2, 12, 12, 0, 768, 3072, 1024, 50257, 0.0, 1e-5},
    {"minimind-26m", kLlama, 8, 8, 2, 512, 1408, 512, 256, 1e6, 1e-5},
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
    return absl::InvalidArgumentError(absl::StrCat(
        "model.preset: \"", model.preset(),
        "\" is not a transformer preset; known: ", absl::StrJoin(ModelPresetNames(), ", ")));
  }
  const TransformerConfig& set = model.transformer();
  TransformerConfig c;
  c.set_flavour(set.flavour().empty() ? p->flavour : set.flavour());
  c.set_layers(set.layers() != 0 ? set.layers() : p->layers);
  c.set_heads(set.heads() != 0 ? set.heads() : p->heads);
  c.set_kv_heads(set.kv_heads() != 0 ? set.kv_heads() : p->kv_heads);
  if (c.kv_heads() == 0) c.set_kv_heads(c.heads());
  c.set_width(set.width() != 0 ? set.width() : p->width);
  c.set_mlp_width(set.mlp_width() != 0 ? set.mlp_width() : p->mlp_width);
  c.set_seq_len(set.seq_len() != 0 ? set.seq_len() : p->seq_len);
  c.set_vocab_size(set.vocab_size() != 0 ? set.vocab_size() : p->vocab_size);
  double theta = 0.0;
  if (c.flavour() == kLlama) theta = p->rope_theta != 0.0 ? p->rope_theta : kDefaultLlamaRopeTheta;
  c.set_rope_theta(set.rope_theta() != 0.0 ? set.rope_theta() : theta);
  c.set_norm_eps(set.norm_eps() != 0.0 ? set.norm_eps() : p->norm_eps);
  return c;
}

absl::Status ValidateTransformerConfig(const TransformerConfig& c) {
  const bool llama = c.flavour() == kLlama;
  if (c.flavour() != kGpt2 && !llama) {
    return Bad("flavour", "must be one of gpt2, llama", absl::StrCat("\"", c.flavour(), "\""));
  }
  if (absl::Status s = CheckRange("layers", c.layers(), 1, kMaxLayers); !s.ok()) return s;
  if (absl::Status s = CheckRange("heads", c.heads(), 1, kMaxHeads); !s.ok()) return s;
  if (absl::Status s = CheckRange("kvHeads", c.kv_heads(), 1, c.heads()); !s.ok()) return s;
  if (c.heads() % c.kv_heads() != 0) {
    return Bad("kvHeads", absl::StrCat("must divide heads (", c.heads(), ")"),
               absl::StrCat(c.kv_heads()));
  }
  if (absl::Status s = CheckRange("width", c.width(), 1, kMaxWidth); !s.ok()) return s;
  if (c.width() % c.heads() != 0) {
    return Bad("width", absl::StrCat("must be a multiple of heads (", c.heads(), ")"),
               absl::StrCat(c.width()));
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
    return Bad("ropeTheta", "is only used by the llama flavour; leave it unset for gpt2",
               absl::StrCat(c.rope_theta()));
  }
  if (!(std::isfinite(c.norm_eps()) && c.norm_eps() > 0.0 && c.norm_eps() <= 1.0)) {
    return Bad("normEps", "must be a finite number greater than 0 and at most 1",
               absl::StrCat(c.norm_eps()));
  }
  return absl::OkStatus();
}

int64_t NumParams(const TransformerConfig& c) {
  const bool gpt2 = c.flavour() == kGpt2;
  const int64_t C = c.width(), M = c.mlp_width(), V = c.vocab_size(), T = c.seq_len();
  const int64_t qkv = (c.heads() + 2 * c.kv_heads()) * (C / c.heads());
  int64_t block = qkv * C + C * C + C * M * (gpt2 ? 1 : 2) + M * C;  // matrices
  block += gpt2 ? 2 * (2 * C) : 2 * C;                               // norms
  if (gpt2) block += qkv + C + M + C;                                // biases
  const int64_t embeddings = V * C + (gpt2 ? T * C : 0);
  const int64_t final_norm = gpt2 ? 2 * C : C;
  return embeddings + c.layers() * block + final_norm;
}

double FlopsPerToken(const TransformerConfig& c) {
  const int64_t positions = c.flavour() == kGpt2 ? int64_t{c.seq_len()} * c.width() : 0;
  const double n = static_cast<double>(NumParams(c) - positions);
  return 6.0 * n + 12.0 * c.layers() * static_cast<double>(c.width()) * c.seq_len();
}

std::string DescribeTransformer(const TransformerConfig& c) {
  std::string kv = c.kv_heads() == c.heads() ? "" : absl::StrCat(" KV", c.kv_heads());
  return absl::StrCat(c.flavour(), " L", c.layers(), " H", c.heads(), kv, " C", c.width(), " M",
                      c.mlp_width(), " T", c.seq_len(), " V", c.vocab_size(), ", ",
                      FormatParams(NumParams(c)));
}

}  // namespace gradsync::nn
