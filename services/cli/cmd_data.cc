// gradsync data prepare: text files to llm.c token shards (bytes, or a tokenizer's ids), so a
// job can read them with data.shards instead of tokenising text at every start. Needs no cluster.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
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
#include "prepare_corpus.h"

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

data::ShardsInfo DescribeTokenizer(const Args& args, const tokenizer::Tokenizer& t) {
  std::error_code ec;
  std::string path;
  if (args.Has("tokenizer")) path = std::filesystem::absolute(args.Get("tokenizer"), ec).lexically_normal().string();
  return {std::string(tokenizer::KindName(t.kind())), path, t.vocab_size()};
}

std::optional<std::string> OptionalArg(const Args& args, const std::string& name) {
  if (!args.Has(name)) return std::nullopt;
  return args.Get(name);
}

// What the files hold, tokenized: documents, or with --chat conversations packed into windows.
absl::StatusOr<Corpus> ReadCorpus(const Args& args, const std::vector<std::string>& paths, const tokenizer::Tokenizer& t,
                                  double val_fraction, uint64_t seed, int seq_len, size_t* bytes) {
  if (args.Has("chat")) {
    if (absl::Status s = CheckChatTemplate(args.Get("chat-template", "chatml"), args.Get("tokenizer", "")); !s.ok()) {
      return s;
    }
    std::vector<Conversation> conversations;
    for (const std::string& path : paths) {
      if (!IsJsonLines(path)) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": --chat reads .jsonl files of conversations"));
      }
      absl::StatusOr<std::vector<Conversation>> read = ReadConversations(path);
      if (!read.ok()) return read.status();
      for (Conversation& c : *read) {
        for (const Turn& turn : c) *bytes += turn.content.size();
        conversations.push_back(std::move(c));
      }
    }
    const int32_t pad = t.SpecialTokenId("<|im_end|>").value_or(0);
    return TokenizeChats(conversations, t, seq_len, !args.Has("no-pack"), pad, val_fraction, seed);
  }
  std::vector<std::string> documents;
  for (const std::string& path : paths) {
    absl::StatusOr<std::vector<std::string>> read = ReadDocuments(path, args.Get("jsonl-field", "text"));
    if (!read.ok()) return read.status();
    for (std::string& d : *read) {
      *bytes += d.size();
      documents.push_back(std::move(d));
    }
  }
  absl::StatusOr<Separators> separators =
      ResolveSeparators(OptionalArg(args, "bos"), OptionalArg(args, "eos"), t, args.Get("tokenizer", ""));
  if (!separators.ok()) return separators.status();
  return TokenizeDocuments(documents, t, *separators, val_fraction, seed);
}

void PrintSplit(const char* what, const SplitTokens& split, const std::vector<data::ShardFile>& files, int vocab) {
  if (files.empty()) return;
  std::printf("wrote %zu %s shard(s) of %s tokens: %lld documents, %zu tokens%s:\n", files.size(), what,
              data::WidthForVocab(vocab) == data::TokenWidth::kUint16 ? "uint16" : "uint32",
              static_cast<long long>(split.documents), split.tokens.size(),
              split.mask.empty() ? "" : absl::StrFormat(" (%lld counted by the loss)",
                                                        static_cast<long long>(std::count(split.mask.begin(), split.mask.end(), 1))).c_str());
  PrintShards(files);
}

int Prepare(const Args& args) {
  const std::vector<std::string> patterns(args.positional.begin() + 1, args.positional.end());
  const std::string dir = args.Get("output");
  if (patterns.empty() || dir.empty()) return Fail(Usage());
  absl::StatusOr<double> val_fraction = ValFraction(args);
  if (!val_fraction.ok()) return Fail(std::string(val_fraction.status().message()));
  absl::StatusOr<int> shard_tokens = args.GetInt("shard-tokens", kDefaultShardTokens, 1, 1 << 30);
  if (!shard_tokens.ok()) return Fail(std::string(shard_tokens.status().message()));
  absl::StatusOr<int> seed = args.GetInt("seed", 1, 0, std::numeric_limits<int>::max());
  if (!seed.ok()) return Fail(std::string(seed.status().message()));
  absl::StatusOr<int> seq_len = args.GetInt("seq-len", 0, 1, 1 << 20);
  if (!seq_len.ok()) return Fail(std::string(seq_len.status().message()));
  if (args.Has("chat") && *seq_len <= 0) {
    return Fail("--chat needs --seq-len T, the model's seqLen: conversations are packed into its windows");
  }
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> tok = ShardTokenizer(args);
  if (!tok.ok()) return Fail(std::string(tok.status().message()));

  absl::StatusOr<std::vector<std::string>> paths = data::ExpandPaths(patterns);
  if (!paths.ok()) return Fail(std::string(paths.status().message()));
  size_t bytes = 0;
  absl::StatusOr<Corpus> corpus =
      ReadCorpus(args, *paths, **tok, *val_fraction, static_cast<uint64_t>(*seed), *seq_len, &bytes);
  if (!corpus.ok()) return Fail(std::string(corpus.status().message()));
  if (*val_fraction > 0 && corpus->val.documents == 0) {
    return Fail(absl::StrFormat("--val-fraction: %g of %d documents drew none to hold out; give more documents, "
                                "a larger fraction or a single file (whose tail is held out)",
                                *val_fraction, corpus->train.documents));
  }
  if (corpus->train.tokens.empty()) return Fail("no tokens for the train shards");

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Fail(absl::StrCat(dir, ": cannot create the directory: ", ec.message()));
  if (absl::Status s = CheckNoShards(dir); !s.ok()) return Fail(std::string(s.message()));
  const int vocab = (*tok)->vocab_size();
  auto train = WriteSplit(dir, "train", corpus->train, vocab, *shard_tokens, *seq_len);
  if (!train.ok()) return Fail(std::string(train.status().message()));
  auto val = WriteSplit(dir, "val", corpus->val, vocab, *shard_tokens, *seq_len);
  if (!val.ok()) return Fail(std::string(val.status().message()));
  data::ShardsInfo info = DescribeTokenizer(args, **tok);
  if (args.Has("chat")) info.packed_seq_len = *seq_len;
  if (absl::Status s = data::WriteShardsInfo(dir, info); !s.ok()) return Fail(std::string(s.message()));
  std::printf("read %zu file(s), %zu bytes of text (%s%s%s, vocabulary %d)\n", paths->size(), bytes,
              info.tokenizer_kind.c_str(), info.tokenizer_path.empty() ? "" : " ", info.tokenizer_path.c_str(), vocab);
  if (corpus->truncated > 0) {
    std::printf("%lld conversation(s) longer than a window of %d tokens were cut to fit\n",
                static_cast<long long>(corpus->truncated), *seq_len);
  }
  PrintSplit("train", corpus->train, *train, vocab);
  PrintSplit("val", corpus->val, *val, vocab);
  std::printf("train on them with: data: {shards: {paths: [\"%s/train_*.bin\"]}} and model.transformer.vocabSize %d%s\n",
              dir.c_str(), vocab, args.Has("chat") ? absl::StrCat(", seqLen ", *seq_len).c_str() : "");
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
               .synopsis = "FILE... -o DIR [--tokenizer TOK] [--val-fraction F] [--seed N] [--bos T] [--eos T]\n"
                           "    [--jsonl-field F] [--chat --seq-len T [--no-pack] [--chat-template chatml|tokenizer]]\n"
                           "    [--shard-tokens N]",
               .summary = "tokenise documents or chats into llm.c shards (train_*.bin, val_*.bin; masks for chats)",
               .example = "gradsync data prepare pretrain.jsonl -o shards --tokenizer tokenizer.json --val-fraction 0.01",
               .details =
                   "FILE: files or globs, in order. A .jsonl file holds a document a line (the string\n"
                   "--jsonl-field, default text, of each line's object); any other file is one document. Each\n"
                   "document is [BOS] ids [EOS]: --bos/--eos name a special token or none; by default a\n"
                   "tokenizer.json's tokenizer_config.json bos_token/eos_token, GPT-2's <|endoftext|> before each\n"
                   "document (llm.c's FineWeb layout), nothing for bytes. With F > 0 a seeded random sample of\n"
                   "about F of the documents (--seed N, default 1; of a single document, its last F) goes to\n"
                   "DIR/val_*.bin. Shards of at most N tokens (default 100000000). TOK: a tokenizer.json,\n"
                   "GPT-2's encoder.json + vocab.bpe (or\n"
                   "their directory) or a SentencePiece .model; without it, one token per byte (vocabulary 256).\n"
                   "Tokens are uint16 when the vocabulary has at most 65536 ids, else uint32.\n"
                   "--chat reads .jsonl conversations ({\"conversations\": [{\"role\", \"content\"}...]}, MiniMind's\n"
                   "SFT layout) in ChatML (--chat-template tokenizer: the tokenizer_config.json's, when it is\n"
                   "ChatML), and writes beside each shard a loss mask (.mask) keeping the assistant's replies;\n"
                   "conversations are packed whole into the windows of a model of seqLen T (--no-pack: one a\n"
                   "window), cut when longer. DIR/shards.json records the tokenizer (and T).\n",
               .options = {Output("DIR"), {"tokenizer", "TOK"}, {"val-fraction", "F"}, {"seed", "N"}, {"bos", "T"},
                           {"eos", "T"}, {"jsonl-field", "F"}, {"chat", ""}, {"seq-len", "T"}, {"no-pack", ""},
                           {"chat-template", "NAME"}, {"shard-tokens", "N"}},
               .operands = Operands::kFiles,
               .run = DataPrepareCommand});
  return t;
}

}  // namespace gradsync::cli
