#include "prepare_corpus.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gradsync/core/rng.h"
#include "gradsync/data/loss_mask.h"
#include "gradsync/data/token_stream.h"
#include "tokenizer_config.h"

namespace gradsync::cli {
namespace {

absl::StatusOr<std::optional<int32_t>> SeparatorOf(const std::string& option, const std::string& text,
                                                   const tokenizer::Tokenizer& t) {
  if (text == "none" || text.empty()) return std::nullopt;
  std::optional<int32_t> id = t.SpecialTokenId(text);
  if (!id.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(option, ": \"", text, "\" is not a special token of the ",
                                                   std::string(tokenizer::KindName(t.kind())), " tokenizer (or give none)"));
  }
  return id;
}

absl::Status Append(const tokenizer::Tokenizer& t, const std::string& text, bool loss, SplitTokens* out) {
  absl::StatusOr<std::vector<int32_t>> ids = t.Encode(text);
  if (!ids.ok()) return ids.status();
  out->tokens.insert(out->tokens.end(), ids->begin(), ids->end());
  out->mask.insert(out->mask.end(), ids->size(), loss ? 1 : 0);
  return absl::OkStatus();
}

// One document leaves nothing to sample: its last `fraction` of tokens are held out instead, as
// nanoGPT splits a single text.
absl::StatusOr<Corpus> SplitTheOneDocument(const std::string& document, const tokenizer::Tokenizer& t,
                                           const Separators& separators, double fraction) {
  Corpus corpus;
  absl::StatusOr<std::vector<int32_t>> ids = t.Encode(document);
  if (!ids.ok()) return ids.status();
  std::vector<uint32_t> all;
  if (separators.bos) all.push_back(static_cast<uint32_t>(*separators.bos));
  all.insert(all.end(), ids->begin(), ids->end());
  if (separators.eos) all.push_back(static_cast<uint32_t>(*separators.eos));
  const auto held = static_cast<size_t>(fraction * static_cast<double>(all.size()));
  corpus.train.tokens.assign(all.begin(), all.end() - static_cast<std::ptrdiff_t>(held));
  corpus.val.tokens.assign(all.end() - static_cast<std::ptrdiff_t>(held), all.end());
  corpus.train.documents = 1;
  corpus.val.documents = held > 0 ? 1 : 0;
  return corpus;
}

}  // namespace

absl::StatusOr<Separators> ResolveSeparators(const std::optional<std::string>& bos, const std::optional<std::string>& eos,
                                             const tokenizer::Tokenizer& t, const std::string& tokenizer_path) {
  std::string default_bos, default_eos;
  if (t.kind() == tokenizer::TokenizerKind::kGpt2Bpe) default_bos = "<|endoftext|>";
  if (t.kind() == tokenizer::TokenizerKind::kHuggingFace) {
    if (absl::StatusOr<TokenizerConfig> config = ReadTokenizerConfig(tokenizer_path); config.ok()) {
      default_bos = config->bos_token;
      default_eos = config->eos_token;
    }
  }
  Separators s;
  absl::StatusOr<std::optional<int32_t>> b = SeparatorOf("--bos", bos.value_or(default_bos), t);
  if (!b.ok()) return b.status();
  absl::StatusOr<std::optional<int32_t>> e = SeparatorOf("--eos", eos.value_or(default_eos), t);
  if (!e.ok()) return e.status();
  s.bos = *b;
  s.eos = *e;
  return s;
}

bool HeldOut(uint64_t seed, int64_t index, double fraction) {
  if (fraction <= 0) return false;
  const uint64_t h = HashCombine(HashCombine(seed, 0x7a1d0cULL), static_cast<uint64_t>(index));
  return static_cast<double>(h >> 11) < fraction * static_cast<double>(uint64_t{1} << 53);
}

absl::StatusOr<Corpus> TokenizeDocuments(const std::vector<std::string>& documents, const tokenizer::Tokenizer& t,
                                         const Separators& separators, double val_fraction, uint64_t seed) {
  Corpus corpus;
  if (documents.size() == 1 && val_fraction > 0) return SplitTheOneDocument(documents[0], t, separators, val_fraction);
  for (size_t i = 0; i < documents.size(); ++i) {
    SplitTokens& split = HeldOut(seed, static_cast<int64_t>(i), val_fraction) ? corpus.val : corpus.train;
    if (separators.bos) split.tokens.push_back(static_cast<uint32_t>(*separators.bos));
    absl::StatusOr<std::vector<int32_t>> ids = t.Encode(documents[i]);
    if (!ids.ok()) return ids.status();
    split.tokens.insert(split.tokens.end(), ids->begin(), ids->end());
    if (separators.eos) split.tokens.push_back(static_cast<uint32_t>(*separators.eos));
    ++split.documents;
  }
  return corpus;
}

absl::StatusOr<Corpus> TokenizeChats(const std::vector<Conversation>& conversations, const tokenizer::Tokenizer& t,
                                     int seq_len, bool pack, int32_t pad, double val_fraction, uint64_t seed) {
  Corpus corpus;
  const auto window = static_cast<size_t>(seq_len);
  // Each split's current window: how many of its seq_len tokens are taken.
  size_t used_train = 0, used_val = 0;
  auto close_window = [&](SplitTokens& split, size_t& used) {
    if (used == 0) return;
    split.tokens.insert(split.tokens.end(), window - used, static_cast<uint32_t>(pad));
    split.mask.insert(split.mask.end(), window - used, 0);
    used = 0;
  };
  for (size_t i = 0; i < conversations.size(); ++i) {
    const bool val = HeldOut(seed, static_cast<int64_t>(i), val_fraction);
    SplitTokens& split = val ? corpus.val : corpus.train;
    size_t& used = val ? used_val : used_train;
    SplitTokens sample;
    for (const ChatSegment& segment : RenderChatMl(conversations[i])) {
      if (absl::Status s = Append(t, segment.text, segment.loss, &sample); !s.ok()) return s;
    }
    if (sample.tokens.size() > window) {
      sample.tokens.resize(window);
      sample.mask.resize(window);
      ++corpus.truncated;
    }
    if (!pack || used + sample.tokens.size() > window) close_window(split, used);
    split.tokens.insert(split.tokens.end(), sample.tokens.begin(), sample.tokens.end());
    split.mask.insert(split.mask.end(), sample.mask.begin(), sample.mask.end());
    used += sample.tokens.size();
    ++split.documents;
    if (used == window) used = 0;
  }
  for (auto [split, used] : {std::pair{&corpus.train, &used_train}, std::pair{&corpus.val, &used_val}}) {
    close_window(*split, *used);
    if (!split->tokens.empty()) {
      split->tokens.push_back(static_cast<uint32_t>(pad));
      split->mask.push_back(0);
    }
  }
  return corpus;
}

absl::StatusOr<std::vector<data::ShardFile>> WriteSplit(const std::string& dir, const std::string& prefix,
                                                        const SplitTokens& split, int vocab_size, int64_t shard_tokens,
                                                        int seq_len) {
  std::vector<data::ShardFile> written;
  if (split.tokens.empty()) return written;
  const data::TokenStream stream = data::TokenStream::OfWidth(split.tokens, data::WidthForVocab(vocab_size));
  if (split.mask.empty()) return data::WriteShards(dir, prefix, stream, shard_tokens);
  // Whole windows a shard, and the one token after its last window: windows = (tokens - 1) / T.
  const int64_t windows = (static_cast<int64_t>(split.tokens.size()) - 1) / seq_len;
  const int64_t per_shard = std::max<int64_t>(1, (shard_tokens - 1) / seq_len);
  for (int64_t first = 0; first < windows; first += per_shard) {
    const int64_t count = std::min(per_shard, windows - first);
    const int64_t begin = first * seq_len, tokens = count * seq_len + 1;
    data::ShardFile file{absl::StrCat(dir, "/", prefix, "_", absl::Dec(written.size(), absl::kZeroPad6), ".bin"), tokens};
    const absl::Status s = stream.Slice(begin, tokens).Visit([&](const auto& v) { return data::WriteShard(file.path, v); });
    if (!s.ok()) return s;
    const std::span<const uint8_t> mask(split.mask.data() + begin, static_cast<size_t>(tokens));
    if (absl::Status m = data::WriteLossMask(data::LossMaskPath(file.path), mask); !m.ok()) return m;
    written.push_back(std::move(file));
  }
  return written;
}

}  // namespace gradsync::cli
