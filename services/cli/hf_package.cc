#include "hf_package.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/data/shards_info.h"
#include "gradsync/tokenizer/tokenizer.h"
#include "prepare_corpus.h"
#include "series_files.h"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;
using google::protobuf::Struct;

absl::StatusOr<Struct> ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Struct s;
  if (!google::protobuf::util::JsonStringToMessage(text, &s).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), " is not a JSON object"));
  }
  return s;
}

absl::Status WriteJson(const fs::path& path, const Struct& s) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(s, &text, options);
  return WriteFileAtomically(path.string(), text);
}

absl::Status Copy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot copy ", from.string(), " to ", to.string(), ": ", ec.message()));
  return absl::OkStatus();
}

// The files of the tokenizer at `path` (a file or a directory, as LoadTokenizer reads it), copied
// into `out` under transformers' names; appends each name written to `written`.
absl::Status CopyTokenizer(const fs::path& path, tokenizer::TokenizerKind kind, int64_t seq_len, const fs::path& out,
                           std::vector<std::string>* written) {
  const fs::path dir = fs::is_directory(path) ? path : path.parent_path();
  auto copy = [&](const fs::path& from, const std::string& name) -> absl::Status {
    if (absl::Status s = Copy(from, out / name); !s.ok()) return s;
    written->push_back(name);
    return absl::OkStatus();
  };
  switch (kind) {
    case tokenizer::TokenizerKind::kHuggingFace: {
      const fs::path file = fs::is_directory(path) ? path / "tokenizer.json" : path;
      if (absl::Status s = copy(file, "tokenizer.json"); !s.ok()) return s;
      for (const char* beside : {"tokenizer_config.json", "special_tokens_map.json"}) {
        if (fs::exists(dir / beside)) {
          if (absl::Status s = copy(dir / beside, beside); !s.ok()) return s;
        }
      }
      return absl::OkStatus();
    }
    case tokenizer::TokenizerKind::kGpt2Bpe: {
      if (absl::Status s = copy(dir / "encoder.json", "vocab.json"); !s.ok()) return s;
      if (absl::Status s = copy(dir / "vocab.bpe", "merges.txt"); !s.ok()) return s;
      Struct config;
      auto& f = *config.mutable_fields();
      f["tokenizer_class"].set_string_value("GPT2Tokenizer");
      for (const char* t : {"bos_token", "eos_token", "unk_token"}) f[t].set_string_value("<|endoftext|>");
      f["model_max_length"].set_number_value(static_cast<double>(seq_len));
      if (absl::Status s = WriteJson(out / "tokenizer_config.json", config); !s.ok()) return s;
      written->push_back("tokenizer_config.json");
      return absl::OkStatus();
    }
    case tokenizer::TokenizerKind::kSentencePiece: {
      const fs::path file = fs::is_directory(path) ? path / "tokenizer.model" : path;
      return copy(file, "tokenizer.model");
    }
    case tokenizer::TokenizerKind::kBytes: return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> TokenizerOfShards(const std::string& dir) {
  absl::StatusOr<std::optional<data::ShardsInfo>> info = data::ReadShardsInfo(dir);
  if (!info.ok()) return info.status();
  if (!info->has_value()) return absl::NotFoundError(absl::StrCat("--shards: ", dir, " has no shards.json"));
  return (*info)->tokenizer_path;
}

absl::StatusOr<std::vector<std::string>> CompleteHfExport(const std::string& out_dir, const HfPackage& package) {
  const fs::path out(out_dir);
  absl::StatusOr<Struct> config = ReadJson(out / "config.json");
  if (!config.ok()) return config.status();
  auto& f = *config->mutable_fields();
  const bool gpt2 = f["model_type"].string_value() == "gpt2";
  const int64_t seq_len = static_cast<int64_t>(f[gpt2 ? "n_positions" : "max_position_embeddings"].number_value());
  const int64_t vocab = static_cast<int64_t>(f["vocab_size"].number_value());
  std::vector<std::string> written;
  if (package.max_positions.has_value()) {
    if (gpt2) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-positions: a gpt2 has learned positions, ", seq_len, " of them: nothing else to declare"));
    }
    if (*package.max_positions < seq_len) {
      return absl::InvalidArgumentError(absl::StrCat("--max-positions: ", *package.max_positions,
                                                     " is below the seqLen the model was trained at, ", seq_len));
    }
    f["max_position_embeddings"].set_number_value(static_cast<double>(*package.max_positions));
  }
  Separators ids;
  if (!package.tokenizer.empty()) {
    absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t = tokenizer::LoadTokenizer(package.tokenizer);
    if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat("--tokenizer: ", t.status().message()));
    if ((*t)->vocab_size() > vocab) {
      return absl::InvalidArgumentError(absl::StrCat("--tokenizer: ", package.tokenizer, " has ", (*t)->vocab_size(),
                                                     " tokens, more than the model's vocabulary of ", vocab));
    }
    if (absl::Status s = CopyTokenizer(package.tokenizer, (*t)->kind(), seq_len, out, &written); !s.ok()) return s;
    absl::StatusOr<Separators> separators = ResolveSeparators(std::nullopt, std::nullopt, **t, package.tokenizer);
    if (separators.ok()) ids = *separators;
    // GPT-2's one special token ends a text as it begins one.
    if ((*t)->kind() == tokenizer::TokenizerKind::kGpt2Bpe && !ids.eos.has_value()) ids.eos = ids.bos;
  }
  Struct generation;
  auto& g = *generation.mutable_fields();
  g["_from_model_config"].set_bool_value(true);
  for (const auto& [name, id] : {std::pair{"bos_token_id", ids.bos}, std::pair{"eos_token_id", ids.eos}}) {
    if (!id.has_value()) continue;
    f[name].set_number_value(*id);
    g[name].set_number_value(*id);
  }
  if (absl::Status s = WriteJson(out / "config.json", *config); !s.ok()) return s;
  if (absl::Status s = WriteJson(out / "generation_config.json", generation); !s.ok()) return s;
  written.push_back("generation_config.json");
  return written;
}

}  // namespace gradsync::cli
