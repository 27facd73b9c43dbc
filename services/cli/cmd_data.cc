// gradsync data prepare: text files to llm.c token shards (bytes, or a tokenizer's ids), so a
// job can read them with data.shards instead of tokenising text at every start. Needs no cluster.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "gradsync/core/args.h"
#include "gradsync/data/shards_info.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/tokenizer/tokenizer.h"

namespace gradsync::cli {
namespace {

// The usage lines from the command table, for errors.
std::string Usage() { return std::string(absl::StripSuffix(GroupUsage("data"), "\n")); }
constexpr int kDefaultShardTokens = 100'000'000;

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 2;
}

absl::StatusOr<double> ValFraction(const Args& args) {
  if (!args.Has("val-fraction")) return 0.0;
  double f = 0;
  const std::string text = args.Get("val-fraction");
  if (!absl::SimpleAtod(text, &f) || !(f >= 0 && f < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--val-fraction: expected a number at least 0 and less than 1, got \"", text, "\""));
  }
  return f;
}

// Shards already in `dir` would mix with the new ones under a glob such as train_*.bin.
absl::Status CheckNoShards(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if ((name.starts_with("train_") || name.starts_with("val_")) && name.ends_with(".bin")) {
      return absl::AlreadyExistsError(absl::StrCat(entry.path().string(),
                                                   ": the output directory already holds shards; remove them or "
                                                   "choose another directory"));
    }
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat(dir, ": cannot list: ", ec.message()));
  return absl::OkStatus();
}

void PrintShards(const std::vector<data::ShardFile>& files) {
  for (const data::ShardFile& f : files) {
    std::printf("  %-40s %12lld tokens\n", f.path.c_str(), static_cast<long long>(f.tokens));
  }
}

// The tokenizer --tokenizer names (bytes without it).
absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> ShardTokenizer(const Args& args) {
  if (!args.Has("tokenizer")) return tokenizer::MakeByteTokenizer();
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t = tokenizer::LoadTokenizer(args.Get("tokenizer"));
  if (!t.ok()) return absl::Status(t.status().code(), absl::StrCat("--tokenizer: ", t.status().message()));
  return t;
}

// The ids of the files, concatenated in order, at the narrowest width that holds the
// tokenizer's vocabulary; `bytes` counts what was read.
absl::StatusOr<data::TokenStream> Tokenize(const std::vector<std::string>& paths, const tokenizer::Tokenizer& t,
                                           size_t* bytes) {
  std::vector<uint32_t> tokens;
  for (const std::string& path : paths) {
    absl::StatusOr<std::string> text = data::ReadTextFile(path);
    if (!text.ok()) return text.status();
    *bytes += text->size();
    absl::StatusOr<std::vector<int32_t>> ids = t.Encode(*text);
    if (!ids.ok()) return absl::Status(ids.status().code(), absl::StrCat(path, ": ", ids.status().message()));
    tokens.insert(tokens.end(), ids->begin(), ids->end());  // ids lie in [0, vocab_size)
  }
  return data::TokenStream::OfWidth(tokens, data::WidthForVocab(t.vocab_size()));
}

data::ShardsInfo DescribeTokenizer(const Args& args, const tokenizer::Tokenizer& t) {
  std::error_code ec;
  std::string path;
  if (args.Has("tokenizer")) path = std::filesystem::absolute(args.Get("tokenizer"), ec).lexically_normal().string();
  return {std::string(tokenizer::KindName(t.kind())), path, t.vocab_size()};
}

absl::StatusOr<std::vector<data::ShardFile>> WriteSplit(const std::string& dir, const char* prefix,
                                                        const data::TokenStream& tokens, int shard_tokens) {
  if (tokens.size() == 0) return std::vector<data::ShardFile>();
  return data::WriteShards(dir, prefix, tokens, shard_tokens);
}

int Prepare(const Args& args) {
  const std::vector<std::string> patterns(args.positional.begin() + 1, args.positional.end());
  const std::string dir = args.Get("output");
  if (patterns.empty() || dir.empty()) return Fail(Usage());
  absl::StatusOr<double> val_fraction = ValFraction(args);
  if (!val_fraction.ok()) return Fail(std::string(val_fraction.status().message()));
  absl::StatusOr<int> shard_tokens = args.GetInt("shard-tokens", kDefaultShardTokens, 1, 1 << 30);
  if (!shard_tokens.ok()) return Fail(std::string(shard_tokens.status().message()));
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = ShardTokenizer(args);
  if (!tok.ok()) return Fail(std::string(tok.status().message()));

  absl::StatusOr<std::vector<std::string>> paths = data::ExpandPaths(patterns);
  if (!paths.ok()) return Fail(std::string(paths.status().message()));
  size_t bytes = 0;
  absl::StatusOr<data::TokenStream> tokens = Tokenize(*paths, **tok, &bytes);
  if (!tokens.ok()) return Fail(std::string(tokens.status().message()));
  const auto total = static_cast<size_t>(tokens->size());
  const auto val_tokens = static_cast<size_t>(std::floor(*val_fraction * static_cast<double>(total)));
  if (*val_fraction > 0 && val_tokens == 0) {
    return Fail(absl::StrFormat("--val-fraction: %g of %d tokens is not a single token", *val_fraction, total));
  }

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(absl::StrCat(dir, ": cannot create the directory: ", ec.message()));
  if (absl::Status s = CheckNoShards(dir); !s.ok()) return Fail(std::string(s.message()));

  const auto train_tokens = static_cast<int64_t>(total - val_tokens);
  auto train = data::WriteShards(dir, "train", tokens->Slice(0, train_tokens), *shard_tokens);
  if (!train.ok()) return Fail(std::string(train.status().message()));
  auto val = WriteSplit(dir, "val", tokens->Slice(train_tokens, static_cast<int64_t>(val_tokens)), *shard_tokens);
  if (!val.ok()) return Fail(std::string(val.status().message()));
  const data::ShardsInfo info = DescribeTokenizer(args, **tok);
  if (absl::Status s = data::WriteShardsInfo(dir, info); !s.ok()) return Fail(std::string(s.message()));
  std::printf("read %zu file(s), %zu bytes = %zu tokens (%s%s%s, vocabulary %d)\n", paths->size(), bytes, total,
              info.tokenizer_kind.c_str(), info.tokenizer_path.empty() ? "" : " ", info.tokenizer_path.c_str(),
              info.vocab_size);
  std::printf("wrote %zu train shard(s) of %s tokens, %zu tokens:\n", train->size(),
              tokens->width() == data::TokenWidth::kUint16 ? "uint16" : "uint32", total - val_tokens);
  PrintShards(*train);
  if (!val->empty()) {
    std::printf("wrote %zu val shard(s), %zu tokens (a job training on the train shards validates on them):\n",
                val->size(), val_tokens);
    PrintShards(*val);
  }
  std::printf("train on them with: data: {shards: {paths: [\"%s/train_*.bin\"]}} and model.transformer.vocabSize %d\n",
              dir.c_str(), info.vocab_size);
  return 0;
}

int DataPrepareCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("data prepare", argv);
  if (!args.ok()) return Fail(absl::StrCat(args.status().message(), "\n", Usage()));
  return Prepare(*args);
}

}  // namespace

int DataCommand(const std::vector<std::string>& argv) { return RunSubcommand("data", argv); }

// Its rows of the command table (command_table.h).
std::vector<Command> DataRows() {
  std::vector<Command> t;
  t.push_back({.name = "data prepare",
               .synopsis = "TEXT... -o DIR [--tokenizer TOK] [--val-fraction F] [--shard-tokens N]",
               .summary = "tokenise text files into llm.c shards (train_*.bin, val_*.bin)",
               .example = "gradsync data prepare 'corpus/*.txt' -o shards --val-fraction 0.05",
               .details =
                   "TEXT: files or globs, concatenated in order. Shards of at most N tokens (default\n"
                   "100000000); with F > 0 the last F of the tokens go to DIR/val_*.bin. TOK: a tokenizer.json,\n"
                   "GPT-2's encoder.json + vocab.bpe (or their directory) or a SentencePiece .model; without\n"
                   "it, one token per byte (vocabulary 256). Tokens are uint16 when the vocabulary has at most\n"
                   "65536 ids, else uint32 (llm.c's Llama 3 layout). DIR/shards.json records the tokenizer.\n",
               .options = {Output("DIR"), {"tokenizer", "TOK"}, {"val-fraction", "F"}, {"shard-tokens", "N"}},
               .operands = Operands::kFiles,
               .run = DataPrepareCommand});
  return t;
}

}  // namespace gradsync::cli
