// `gradsync data prepare`'s corpus logic: documents with their separators, a seeded sample held
// out, JSONL read line by line with errors naming the line, and chats rendered in ChatML, masked
// for the assistant's replies and packed whole into windows, checked against masks built by hand.
#include "prepare_corpus.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gradsync/data/loss_mask.h"
#include "gradsync/data/token_dataset.h"
#include "gradsync/kernels/cpu/softmax_xent.h"
#include "gtest/gtest.h"
#include "tokenizer_json.h"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class PrepareCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("prepare_corpus_test_", ::getpid(), "_",
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return (dir_ / name).string();
  }
  fs::path dir_;
  std::unique_ptr<tokenizer::Tokenizer> bytes_ = tokenizer::MakeByteTokenizer();
};

std::vector<uint32_t> Bytes(const std::string& text) { return std::vector<uint32_t>(text.begin(), text.end()); }

// The hand-built expectation: ChatML's text, the prompt's bytes unmasked and the reply's (with its
// "<|im_end|>\n") masked in, padded with 0 to the window, then the one trailing token.
TEST_F(PrepareCorpusTest, AChatIsMaskedOnTheAssistantsReplyAndPaddedToItsWindow) {
  const Conversation chat = {{"system", "be brief"}, {"user", "hi"}, {"assistant", "yo"}};
  absl::StatusOr<Corpus> corpus = TokenizeChats({chat}, *bytes_, 128, /*pack=*/true, /*pad=*/0, 0, 1);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  const std::string prompt = "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
                             "<|im_start|>assistant\n";
  const std::string reply = "yo<|im_end|>\n";
  std::vector<uint32_t> tokens = Bytes(prompt + reply);
  std::vector<uint8_t> mask(prompt.size(), 0);
  mask.insert(mask.end(), reply.size(), 1);
  ASSERT_LT(tokens.size(), 128u);
  tokens.resize(129, 0);
  mask.resize(129, 0);
  EXPECT_EQ(corpus->train.tokens, tokens);
  EXPECT_EQ(corpus->train.mask, mask);
  EXPECT_EQ(corpus->train.documents, 1);
  EXPECT_EQ(corpus->truncated, 0);
}

// Packed: whole conversations only in every window of T tokens (stride T), the next one moved to a
// fresh window when it does not fit; unpacked, one a window; a conversation longer than a window
// is cut to fit, and counted.
TEST_F(PrepareCorpusTest, ConversationsArePackedWholeIntoWindowsAndNeverCrossOne) {
  std::vector<Conversation> chats;
  for (int i = 0; i < 7; ++i) chats.push_back({{"user", std::string(5 + 3 * i, 'q')}, {"assistant", std::string(4 + i, 'a')}});
  chats.push_back({{"user", std::string(300, 'q')}, {"assistant", "too long"}});
  constexpr int kT = 256;
  for (const bool pack : {true, false}) {
    absl::StatusOr<Corpus> corpus = TokenizeChats(chats, *bytes_, kT, pack, 0, 0, 1);
    ASSERT_TRUE(corpus.ok()) << corpus.status();
    const std::vector<uint32_t>& t = corpus->train.tokens;
    ASSERT_EQ((t.size() - 1) % kT, 0u) << "whole windows and one trailing token";
    EXPECT_EQ(corpus->truncated, 1);
    // Every window begins a conversation and holds whole ones, then padding to its end (so none
    // reaches into the next), and its first token, a turn's start, is never a target.
    const std::string text(t.begin(), t.end());
    int starts = 0;
    for (size_t at = text.find("<|im_start|>user"); at != std::string::npos; at = text.find("<|im_start|>user", at + 1)) {
      ++starts;
    }
    EXPECT_EQ(starts, 8);
    const size_t windows = (t.size() - 1) / kT;
    if (pack) {
      EXPECT_LT(windows, 8u) << "short conversations share windows";
    } else {
      EXPECT_EQ(windows, 8u) << "one conversation a window";
    }
    for (size_t w = 0; w < windows; ++w) {
      EXPECT_EQ(text.compare(w * kT, 12, "<|im_start|>"), 0) << "window " << w << " does not begin a conversation";
      EXPECT_EQ(corpus->train.mask[w * kT], 0) << "window " << w;
      const std::string owned = text.substr(w * kT, kT);
      const size_t pad = owned.find('\0');
      if (pad != std::string::npos) {
        EXPECT_EQ(owned.find_first_not_of('\0', pad), std::string::npos) << "window " << w << " resumes after its padding";
      }
    }
  }
}

TEST_F(PrepareCorpusTest, DocumentsGetTheirSeparatorsAndASeededSampleIsHeldOut) {
  const std::string tokenizer = Write("tokenizer.json", testing::TokenizerJson(258));
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> hf = tokenizer::LoadTokenizer(tokenizer);
  ASSERT_TRUE(hf.ok()) << hf.status();
  absl::StatusOr<Separators> seps = ResolveSeparators(std::nullopt, std::string("<|end|>"), **hf, tokenizer);
  ASSERT_TRUE(seps.ok()) << seps.status();
  EXPECT_FALSE(seps->bos.has_value()) << "no tokenizer_config.json: no default";
  EXPECT_EQ(seps->eos, 258);
  absl::StatusOr<Corpus> two = TokenizeDocuments({"ab", "c"}, **hf, *seps, 0, 1);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->train.tokens, (std::vector<uint32_t>{'a', 'b', 258, 'c', 258}));

  // A tokenizer_config.json's bos_token and eos_token are the defaults.
  Write("tokenizer_config.json", R"({"bos_token": {"content": "<|end|>"}, "eos_token": "<|end|>"})");
  seps = ResolveSeparators(std::nullopt, std::nullopt, **hf, tokenizer);
  ASSERT_TRUE(seps.ok()) << seps.status();
  EXPECT_EQ(seps->bos, 258);
  EXPECT_EQ(seps->eos, 258);
  EXPECT_FALSE(ResolveSeparators(std::nullopt, std::string("none"), **hf, tokenizer)->eos.has_value());
  const absl::Status unknown = ResolveSeparators(std::string("<|nope|>"), std::nullopt, **hf, tokenizer).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("--bos: \"<|nope|>\" is not a special token"));

  std::vector<std::string> docs;
  for (int i = 0; i < 10000; ++i) docs.push_back(absl::StrCat("d", i));
  absl::StatusOr<Corpus> a = TokenizeDocuments(docs, *bytes_, {}, 0.1, 7), b = TokenizeDocuments(docs, *bytes_, {}, 0.1, 7),
                         c = TokenizeDocuments(docs, *bytes_, {}, 0.1, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // Binomial(10000, 0.1): sd 30; 1000 +- 150 is five of them.
  EXPECT_NEAR(a->val.documents, 1000, 150);
  EXPECT_EQ(a->val.documents + a->train.documents, 10000);
  EXPECT_EQ(a->val.tokens, b->val.tokens) << "the same seed holds out the same documents";
  EXPECT_NE(a->val.tokens, c->val.tokens) << "the seed matters";
  // Not the tail: held-out documents come from everywhere.
  std::set<bool> early;
  for (int i = 0; i < 10000; ++i) early.insert(HeldOut(7, i, 0.1) && i < 5000);
  EXPECT_TRUE(early.count(true)) << "no document of the first half held out";
}

TEST_F(PrepareCorpusTest, JsonLinesAreReadALineAtATimeAndABadLineIsNamed) {
  const std::string good = Write("pre.jsonl", "{\"text\": \"one\"}\n\n{\"text\": \"two\", \"id\": 2}\n");
  absl::StatusOr<std::vector<std::string>> docs = ReadDocuments(good, "text");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ(*docs, (std::vector<std::string>{"one", "two"}));
  EXPECT_THAT(std::string(ReadDocuments(good, "body").status().message()),
              HasSubstr("pre.jsonl:1: no string field \"body\" (--jsonl-field)"));
  const std::string bad = Write("bad.jsonl", "{\"text\": \"one\"}\n{\"text\": \n");
  EXPECT_THAT(std::string(ReadDocuments(bad, "text").status().message()), HasSubstr("bad.jsonl:2: not a JSON object"));
  const std::string plain = Write("plain.txt", "{\"text\": \"kept whole\"}");
  EXPECT_EQ(ReadDocuments(plain, "text")->at(0), "{\"text\": \"kept whole\"}") << "only .jsonl is read as JSON";

  const std::string chats = Write("sft.jsonl", R"({"conversations": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})"
                                               "\n" R"({"conversations": [{"role": "robot", "content": "q"}]})" "\n");
  EXPECT_THAT(std::string(ReadConversations(chats).status().message()),
              HasSubstr("sft.jsonl:2: conversations[0].role: must be one of system, user, assistant"));
}

// Masked shards: cut at whole windows, each with its mask beside it, and read back by the dataset a
// job trains on, the masked targets the ignore index.
TEST_F(PrepareCorpusTest, MaskedShardsAreCutAtWindowsAndTheDatasetIgnoresWhatTheirMasksLeaveOut) {
  std::vector<Conversation> chats;
  for (int i = 0; i < 9; ++i) chats.push_back({{"user", absl::StrCat("question ", i)}, {"assistant", absl::StrCat("answer ", i)}});
  constexpr int kT = 32;
  absl::StatusOr<Corpus> corpus = TokenizeChats(chats, *bytes_, kT, /*pack=*/false, 0, 0, 1);
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  absl::StatusOr<std::vector<data::ShardFile>> files =
      WriteSplit(dir_.string(), "train", corpus->train, 256, /*shard_tokens=*/4 * kT + 1, kT);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 3u) << "9 windows, 4 a shard";
  for (const data::ShardFile& f : *files) {
    EXPECT_EQ((f.tokens - 1) % kT, 0) << f.path;
    EXPECT_TRUE(fs::exists(data::LossMaskPath(f.path))) << f.path;
  }
  absl::StatusOr<std::unique_ptr<data::TokenDataset>> ds =
      data::TokenDataset::Load({(dir_ / "train_*.bin").string()}, true, kT, 256);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 9);
  EXPECT_TRUE((*ds)->masked());
  std::vector<int64_t> all(9);
  for (int i = 0; i < 9; ++i) all[i] = i;
  nn::Batch batch;
  ASSERT_TRUE((*ds)->Fill(all, &batch).ok());
  for (int w = 0; w < 9; ++w) {
    for (int p = 0; p < kT; ++p) {
      const size_t token = static_cast<size_t>(w * kT + p + 1);  // the target of window w, position p
      const int32_t want = corpus->train.mask[token] ? static_cast<int32_t>(corpus->train.tokens[token])
                                                     : kernels::cpu::kIgnoreIndex;
      ASSERT_EQ(batch.targets[static_cast<size_t>(w * kT + p)], want) << "window " << w << " position " << p;
    }
  }
}

}  // namespace
}  // namespace gradsync::cli
