#include "hf_config.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync::tokenizer {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// Errors name the file and the field; a value from the file is quoted only when it looks like a
// type name (letters, digits, '_', up to 40), never free text.
class Fields {
 public:
  explicit Fields(const std::string& path) : path_(path) {}

  absl::Status Error(const std::string& field, const std::string& problem) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", field, ": ", problem));
  }

  absl::Status Unsupported(const std::string& field, const Value& value) const {
    const std::string& name = value.string_value();
    const bool quotable = !name.empty() && name.size() <= 40 && std::all_of(name.begin(), name.end(), [](char c) {
      return absl::ascii_isalnum(c) || c == '_';
    });
    return Error(field, quotable ? absl::StrCat("\"", name, "\" is not supported") : "this value is not supported");
  }

 private:
  const std::string& path_;
};

// The member `key` of `object`, or nullptr when it is absent or null.
const Value* Member(const Struct& object, const std::string& key) {
  const auto it = object.fields().find(key);
  if (it == object.fields().end() || it->second.has_null_value()) return nullptr;
  return &it->second;
}

bool Flag(const Struct& object, const std::string& key, bool fallback) {
  const Value* v = Member(object, key);
  return v != nullptr && v->has_bool_value() ? v->bool_value() : fallback;
}

absl::Status ParseNormalizer(const Struct& root, const Fields& f) {
  const Value* normalizer = Member(root, "normalizer");
  if (normalizer == nullptr) return absl::OkStatus();
  const Value* type = normalizer->has_struct_value() ? Member(normalizer->struct_value(), "type") : nullptr;
  const Value* list = normalizer->has_struct_value() ? Member(normalizer->struct_value(), "normalizers") : nullptr;
  if (type != nullptr && type->string_value() == "Sequence" && list != nullptr && list->list_value().values().empty()) {
    return absl::OkStatus();
  }
  if (type == nullptr) return f.Error("normalizer", "a normalizer is not supported");
  return f.Unsupported("normalizer.type", *type);
}

// One step of the pre-tokenizer at `field`; Sequence recurses.
absl::Status ParsePreTokenizerStep(const Value& step, const std::string& field, const Fields& f, HfConfig* config,
                                   bool* byte_level) {
  const Value* type = step.has_struct_value() ? Member(step.struct_value(), "type") : nullptr;
  if (type == nullptr) return f.Error(field, "has no type");
  const Struct& s = step.struct_value();
  const std::string& name = type->string_value();
  if (name == "Sequence") {
    const Value* list = Member(s, "pretokenizers");
    if (list == nullptr || !list->has_list_value()) return f.Error(field + ".pretokenizers", "must be a list");
    for (int i = 0; i < list->list_value().values_size(); ++i) {
      absl::Status status = ParsePreTokenizerStep(
          list->list_value().values(i), absl::StrCat(field, ".pretokenizers[", i, "]"), f, config, byte_level);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  if (*byte_level) return f.Error(field, "a step after ByteLevel is not supported");
  if (name == "Split") {
    const Value* pattern = Member(s, "pattern");
    const Value* regex =
        pattern != nullptr && pattern->has_struct_value() ? Member(pattern->struct_value(), "Regex") : nullptr;
    if (regex == nullptr) return f.Error(field + ".pattern", "only a Regex pattern is supported");
    const std::optional<SplitPattern> known = RecognizePattern(regex->string_value());
    if (!known) {
      return f.Error(
          field + ".pattern.Regex",
          "only the split patterns of GPT-2, Llama-3 and Qwen2 are supported, spelt as their files spell them");
    }
    if (config->split) return f.Error(field, "a second split pattern is not supported");
    const Value* behavior = Member(s, "behavior");
    if (behavior == nullptr || behavior->string_value() != "Isolated") {
      return behavior == nullptr ? f.Error(field + ".behavior", "must be Isolated")
                                 : f.Unsupported(field + ".behavior", *behavior);
    }
    if (Flag(s, "invert", false)) return f.Error(field + ".invert", "true is not supported");
    config->split = known;
    return absl::OkStatus();
  }
  if (name == "ByteLevel") {
    *byte_level = true;
    config->add_prefix_space = Flag(s, "add_prefix_space", true);
    if (config->add_prefix_space && config->split) {
      return f.Error(field + ".add_prefix_space", "true after a Split is not supported");
    }
    if (Flag(s, "use_regex", true)) {
      if (config->split) return f.Error(field + ".use_regex", "true after a Split is not supported");
      config->split = SplitPattern::kGpt2;
    }
    return absl::OkStatus();
  }
  return f.Unsupported(field + ".type", *type);
}

absl::Status ParsePreTokenizer(const Struct& root, const Fields& f, HfConfig* config) {
  const Value* pre = Member(root, "pre_tokenizer");
  if (pre == nullptr) return f.Error("pre_tokenizer", "a ByteLevel pre-tokenizer is needed (it is null)");
  bool byte_level = false;
  absl::Status status = ParsePreTokenizerStep(*pre, "pre_tokenizer", f, config, &byte_level);
  if (status.ok() && !byte_level)
    return f.Error("pre_tokenizer", "has no ByteLevel step; only byte-level BPE is supported");
  return status;
}

absl::Status ParseDecoder(const Struct& root, const Fields& f) {
  const Value* decoder = Member(root, "decoder");
  const Value* type =
      decoder != nullptr && decoder->has_struct_value() ? Member(decoder->struct_value(), "type") : nullptr;
  if (type == nullptr) return f.Error("decoder", "a ByteLevel decoder is needed");
  if (type->string_value() != "ByteLevel") return f.Unsupported("decoder.type", *type);
  return absl::OkStatus();
}

// An integer id in [0, 2^30).
std::optional<int32_t> Id(const Value& v) {
  const double d = v.number_value();
  if (!v.has_number_value() || d < 0 || d >= (1 << 30) || d != static_cast<int32_t>(d)) return std::nullopt;
  return static_cast<int32_t>(d);
}

absl::Status ParseMerges(const Value& merges, const Fields& f, HfConfig* config) {
  if (!merges.has_list_value()) return f.Error("model.merges", "must be a list");
  config->merges.reserve(merges.list_value().values_size());
  for (int i = 0; i < merges.list_value().values_size(); ++i) {
    const Value& m = merges.list_value().values(i);
    if (m.has_string_value()) {
      // "A B": tokens hold no space (byte-level spells it "Ġ"), so the one space separates.
      const std::string& s = m.string_value();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return f.Error(absl::StrCat("model.merges[", i, "]"), "a merge is two tokens separated by one space");
      }
      config->merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.has_list_value() && m.list_value().values_size() == 2 && m.list_value().values(0).has_string_value() &&
               m.list_value().values(1).has_string_value()) {
      config->merges.emplace_back(m.list_value().values(0).string_value(), m.list_value().values(1).string_value());
    } else {
      return f.Error(absl::StrCat("model.merges[", i, "]"), "a merge is \"A B\" or [\"A\", \"B\"]");
    }
  }
  return absl::OkStatus();
}

absl::Status ParseModel(const Struct& root, const Fields& f, HfConfig* config) {
  const Value* model = Member(root, "model");
  if (model == nullptr || !model->has_struct_value()) return f.Error("model", "must be an object");
  const Struct& m = model->struct_value();
  // Files written before the model had a type tag have none; vocab and merges make it BPE.
  if (const Value* type = Member(m, "type"); type != nullptr && type->string_value() != "BPE") {
    return f.Unsupported("model.type", *type);
  }
  if (const Value* dropout = Member(m, "dropout"); dropout != nullptr && dropout->number_value() != 0) {
    return f.Error("model.dropout", "BPE dropout is not supported (it makes encoding random)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const Value* v = Member(m, key); v != nullptr && !v->string_value().empty()) {
      return f.Error(absl::StrCat("model.", key), "is not supported by byte-level BPE");
    }
  }
  if (Flag(m, "byte_fallback", false)) return f.Error("model.byte_fallback", "true is not supported");
  config->ignore_merges = Flag(m, "ignore_merges", false);
  const Value* vocab = Member(m, "vocab");
  if (vocab == nullptr || !vocab->has_struct_value()) return f.Error("model.vocab", "must be an object of token ids");
  config->vocab.reserve(vocab->struct_value().fields().size());
  for (const auto& [token, value] : vocab->struct_value().fields()) {
    const std::optional<int32_t> id = Id(value);
    if (!id) return f.Error("model.vocab", "every token's value must be an id, an integer from 0");
    config->vocab.emplace_back(token, *id);
  }
  const Value* merges = Member(m, "merges");
  if (merges == nullptr) return f.Error("model.merges", "is missing");
  return ParseMerges(*merges, f, config);
}

absl::Status ParseAddedTokens(const Struct& root, const Fields& f, HfConfig* config) {
  const Value* added = Member(root, "added_tokens");
  if (added == nullptr) return absl::OkStatus();
  if (!added->has_list_value()) return f.Error("added_tokens", "must be a list");
  for (int i = 0; i < added->list_value().values_size(); ++i) {
    const std::string field = absl::StrCat("added_tokens[", i, "]");
    const Value& v = added->list_value().values(i);
    if (!v.has_struct_value()) return f.Error(field, "must be an object");
    const Struct& t = v.struct_value();
    const Value* id = Member(t, "id");
    const Value* content = Member(t, "content");
    if (id == nullptr || !Id(*id)) return f.Error(field + ".id", "must be an id, an integer from 0");
    if (content == nullptr || content->string_value().empty())
      return f.Error(field + ".content", "must be a non-empty string");
    if (Flag(t, "single_word", false)) return f.Error(field + ".single_word", "true is not supported");
    config->added_tokens.push_back(
        {*Id(*id), content->string_value(), Flag(t, "lstrip", false), Flag(t, "rstrip", false)});
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<HfConfig> ParseHfConfig(const Value& json, const std::string& path) {
  const Fields f(path);
  if (!json.has_struct_value()) return absl::InvalidArgumentError(absl::StrCat(path, ": is not a JSON object"));
  const Struct& root = json.struct_value();
  HfConfig config;
  if (absl::Status s = ParseNormalizer(root, f); !s.ok()) return s;
  if (absl::Status s = ParsePreTokenizer(root, f, &config); !s.ok()) return s;
  if (absl::Status s = ParseModel(root, f, &config); !s.ok()) return s;
  if (absl::Status s = ParseAddedTokens(root, f, &config); !s.ok()) return s;
  if (absl::Status s = ParseDecoder(root, f); !s.ok()) return s;
  return config;
}

}  // namespace gradsync::tokenizer
