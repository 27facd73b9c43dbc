// `gradsync data prepare`'s logic apart from its command line: documents tokenized with the
// tokenizer's beginning/end-of-text tokens between them, a seeded random sample of documents held
// out for validation, and conversations rendered with a chat template, masked for the loss and
// packed into the windows a model of seqLen T reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "chat_template.h"
#include "documents.h"
#include "gradsync/data/shards_info.h"
#include "gradsync/data/token_shard.h"
#include "gradsync/tokenizer/tokenizer.h"

namespace gradsync::cli {

// The ids put before and after every document; either may be none.
struct Separators {
  std::optional<int32_t> bos, eos;
};

// --bos and --eos: "none", a special token's text ("<|endoftext|>", the tokenizer's
// SpecialTokenId), or unset for the tokenizer's defaults: a tokenizer_config.json's bos_token and
// eos_token beside a tokenizer.json; GPT-2's <|endoftext|> before each document, as llm.c's
// FineWeb shards have it; none for bytes and SentencePiece. INVALID_ARGUMENT naming the option
// for a text that is not one of the tokenizer's special tokens.
absl::StatusOr<Separators> ResolveSeparators(const std::optional<std::string>& bos, const std::optional<std::string>& eos,
                                             const tokenizer::Tokenizer& t, const std::string& tokenizer_path);

// Whether document `index` is held out for validation: a hash of (seed, index) below `fraction`
// of its range. A seeded random sample of the documents, the same on every machine.
bool HeldOut(uint64_t seed, int64_t index, double fraction);

// Tokens of one split, with their loss mask (empty unless chats: 1 where a token is a target).
struct SplitTokens {
  std::vector<uint32_t> tokens;
  std::vector<uint8_t> mask;
  int64_t documents = 0;
};
struct Corpus {
  SplitTokens train, val;
  int64_t truncated = 0;  // chats cut to fit one window
};

// Documents, each as [bos] ids [eos], into train or val by HeldOut(seed, i, val_fraction). A single
// document leaves nothing to sample: its last val_fraction of tokens are held out (nanoGPT's split).
absl::StatusOr<Corpus> TokenizeDocuments(const std::vector<std::string>& documents, const tokenizer::Tokenizer& t,
                                         const Separators& separators, double val_fraction, uint64_t seed);

// Conversations in ChatML, each segment tokenized on its own and masked as the template says,
// then packed: every window of seq_len + 1 tokens (stride seq_len, as TokenDataset reads them)
// holds whole conversations only (`pack`: as many as fit; else one each), padded to its end with
// `pad` (masked), and a conversation longer than a window is cut to fit (counted in truncated).
// Each split ends with one more padding token, the target of its last window's last position.
// A window's first token predicts nothing across a boundary: it is a turn's <|im_start|>, masked.
absl::StatusOr<Corpus> TokenizeChats(const std::vector<Conversation>& conversations, const tokenizer::Tokenizer& t,
                                     int seq_len, bool pack, int32_t pad, double val_fraction, uint64_t seed);

// Writes `split` as `dir`/`prefix`_000000.bin ... of at most `shard_tokens` tokens each (and, with a
// mask, `prefix`_000000.mask beside each, cut at whole windows of seq_len so a shard never splits
// a window): what WriteShards writes for plain tokens. Returns the files written.
absl::StatusOr<std::vector<data::ShardFile>> WriteSplit(const std::string& dir, const std::string& prefix,
                                                        const SplitTokens& split, int vocab_size, int64_t shard_tokens,
                                                        int seq_len);

}  // namespace gradsync::cli
