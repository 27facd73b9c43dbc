// The tokenizers on small files written here: GPT-2's pair, tokenizer.json forms and their
// refusals, LoadTokenizer's choice of kind, and errors that name the file and field.
#include "gradsync/tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "byte_level.h"
#include "google/protobuf/unknown_field_set.h"

namespace gradsync::tokenizer {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

std::string Quote(const std::string& s) {
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}}), "\"");
}

// A byte-level vocabulary: ids 0..255 are the bytes, then "he" 256, "ll" 257, "hell" 258,
// "hello" 259 and "Ġw" 260, made by the merges in that order.
struct TinyVocab {
  std::vector<std::pair<std::string, int>> tokens;
  std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"\xC4\xA0", "w"}};

  TinyVocab() {
    for (int b = 0; b < 256; ++b) tokens.emplace_back(ToByteLevel(std::string(1, static_cast<char>(b))), b);
    for (const auto& [a, b] : merges) tokens.emplace_back(a + b, static_cast<int>(tokens.size()));
  }

  std::string VocabJson() const {
    std::string out = "{";
    for (const auto& [token, id] : tokens) absl::StrAppend(&out, out.size() > 1 ? "," : "", Quote(token), ":", id);
    return out + "}";
  }
};

class TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("tokenizer_test_", ::getpid(), "_",
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  void WriteGpt2() {
    Write("encoder.json", vocab_.VocabJson());
    std::string bpe = "#version: 0.2\n";
    for (const auto& [a, b] : vocab_.merges) absl::StrAppend(&bpe, a, " ", b, "\n");
    Write("vocab.bpe", bpe);
  }

  // A GPT-2-shaped tokenizer.json with the pre-tokenizer given.
  std::string HfJson(
      const std::string& pre_tokenizer = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})") {
    std::string merges;
    for (const auto& [a, b] : vocab_.merges) absl::StrAppend(&merges, merges.empty() ? "" : ",", Quote(a + " " + b));
    return absl::StrCat(R"({"normalizer":null,"pre_tokenizer":)", pre_tokenizer, ",",
                        R"("added_tokens":[{"id":261,"content":"<|end|>","special":true}],)",
                        R"("decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":)", vocab_.VocabJson(),
                        R"(,"merges":[)", merges, "]}}");
  }

  fs::path dir_;
  TinyVocab vocab_;
};

TEST_F(TokenizerTest, Gpt2PairEncodesByMergeRankAndDecodesBack) {
  WriteGpt2();
  for (const std::string& path : {dir_.string(), (dir_ / "encoder.json").string(), (dir_ / "vocab.bpe").string()}) {
    absl::StatusOr<std::unique_ptr<Tokenizer>> t = LoadTokenizer(path);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->kind(), TokenizerKind::kGpt2Bpe);
    EXPECT_EQ((*t)->vocab_size(), 261);
    // "hello" merges fully; " hello" keeps its space apart (no "Ġh" merge); " w" merges.
    EXPECT_THAT(*(*t)->Encode("hello hello wa"), ElementsAre(259, ' ', 259, 260, 'a'));
    EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{259, 260, ' '}), "hello w ");
  }
}

TEST_F(TokenizerTest, InvalidUtf8EncodesAsReplacementCharacters) {
  WriteGpt2();
  auto t = LoadTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status();
  // One U+FFFD (EF BF BD) for the truncated sequence E2 82, and the text goes on.
  EXPECT_THAT(*(*t)->Encode("a\xE2\x82z"), ElementsAre('a', 0xEF, 0xBF, 0xBD, 'z'));
}

// A tokenizer.json nested 100,000 deep once took a minute in protobuf's parser: it is refused
// before any parser reads it.
TEST_F(TokenizerTest, ATokenizerJsonNestedTooDeepIsRefusedAtOnce) {
  const std::string path =
      Write("tokenizer.json", R"({"model": )" + std::string(100000, '[') + std::string(100000, ']') + "}");
  const absl::Time start = absl::Now();
  const absl::Status s = LoadTokenizer(path).status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nest deeper than 64 levels"), std::string::npos) << s;
}

// A SentencePiece model whose precompiled character map is a trie of 8 bytes followed by 64 bytes
// of 0xff: the library reads it out of bounds and crashes (Normalizer::NormalizePrefix) on the
// first text it normalises. Loading it fails with an error naming the file; the process lives.
TEST_F(TokenizerTest, AMalformedSentencePieceModelIsRefusedNotCrashedOn) {
  std::string text;
  for (int i = 0; i < 200; ++i) absl::StrAppend(&text, "the quick brown fox jumps over the lazy dog ", i, "\n");
  const std::string corpus = Write("corpus.txt", text);
  const std::string prefix = (dir_ / "m").string();
  const std::string train = absl::StrCat("spm_train --input=", corpus, " --model_prefix=", prefix,
                                         " --vocab_size=60 --character_coverage=1.0 > /dev/null 2>&1");
  if (std::system(train.c_str()) != 0) GTEST_SKIP() << "spm_train (Debian's sentencepiece) is not installed";
  const std::string good = prefix + ".model";
  absl::StatusOr<std::unique_ptr<Tokenizer>> loaded = LoadTokenizer(good);
  if (absl::IsUnimplemented(loaded.status())) GTEST_SKIP() << loaded.status();
  ASSERT_TRUE(loaded.ok()) << loaded.status();

  // The same model with normalizer_spec (field 3).precompiled_charsmap (field 2) replaced.
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  google::protobuf::UnknownFieldSet model;
  ASSERT_TRUE(model.ParseFromString(bytes));
  google::protobuf::UnknownFieldSet rebuilt;
  for (int i = 0; i < model.field_count(); ++i) {
    const google::protobuf::UnknownField& f = model.field(i);
    if (f.number() != 3 || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      rebuilt.AddField(f);
      continue;
    }
    google::protobuf::UnknownFieldSet normalizer, kept;
    ASSERT_TRUE(normalizer.ParseFromString(f.length_delimited()));
    for (int j = 0; j < normalizer.field_count(); ++j) {
      if (normalizer.field(j).number() != 2) kept.AddField(normalizer.field(j));
    }
    std::string charsmap("\x08\x00\x00\x00", 4);
    charsmap += std::string(64, '\xff');
    kept.AddLengthDelimited(2, charsmap);
    std::string serialized;
    ASSERT_TRUE(kept.SerializeToString(&serialized));
    rebuilt.AddLengthDelimited(3, serialized);
  }
  std::string bad_bytes;
  ASSERT_TRUE(rebuilt.SerializeToString(&bad_bytes));
  const std::string bad = Write("bad.model", bad_bytes);
  const absl::Status s = LoadTokenizer(bad).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("bad.model: the SentencePiece library crashed on this model"));
}

TEST_F(TokenizerTest, DecodeRefusesIdsOutsideTheVocabulary) {
  WriteGpt2();
  auto t = LoadTokenizer(dir_.string());
  ASSERT_TRUE(t.ok()) << t.status();
  const absl::StatusOr<std::string> bytes = (*t)->Decode(std::vector<int32_t>{1, 261});
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("token 1 (id 261)"));
  EXPECT_FALSE((*t)->Decode(std::vector<int32_t>{-1}).ok());
}

TEST_F(TokenizerTest, Gpt2ErrorsNameTheFileNotItsContents) {
  EXPECT_EQ(LoadTokenizer(dir_.string()).status().code(), absl::StatusCode::kNotFound);
  Write("encoder.json", "secret-value-not-json");
  Write("vocab.bpe", "#version: 0.2\n");
  absl::Status s = LoadTokenizer(dir_.string()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("encoder.json: is not valid JSON"));
  EXPECT_THAT(s.message(), Not(HasSubstr("secret")));
  WriteGpt2();
  Write("vocab.bpe", "#version: 0.2\nh e\nthree tokens here\n");
  EXPECT_THAT(LoadTokenizer(dir_.string()).status().message(), HasSubstr("vocab.bpe: line 3:"));
  Write("vocab.bpe", "#version: 0.2\nh zz\n");
  EXPECT_THAT(LoadTokenizer(dir_.string()).status().message(), HasSubstr("merges[0]"));
  Write("encoder.json", R"({"a": 0})");
  EXPECT_THAT(LoadTokenizer(dir_.string()).status().message(), HasSubstr("has no token for byte 0x00"));
}

TEST_F(TokenizerTest, HuggingFaceByteLevelWithAddedTokens) {
  const std::string path = Write("tokenizer.json", HfJson());
  for (const std::string& p : {path, dir_.string()}) {
    auto t = LoadTokenizer(p);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->kind(), TokenizerKind::kHuggingFace);
    EXPECT_EQ((*t)->vocab_size(), 262);
    EXPECT_THAT(*(*t)->Encode("hello<|end|>hello"), ElementsAre(259, 261, 259));
    EXPECT_EQ(*(*t)->Decode(std::vector<int32_t>{259, 261}), "hello<|end|>");
  }
}

TEST_F(TokenizerTest, HuggingFaceAddPrefixSpaceAppliesToEachSegment) {
  auto t = LoadTokenizer(Write("tokenizer.json", HfJson(R"({"type":"ByteLevel","add_prefix_space":true})")));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(*(*t)->Encode("wa<|end|>wa"), ElementsAre(260, 'a', 261, 260, 'a'));
}

TEST_F(TokenizerTest, HuggingFaceLlama3SplitAndIgnoreMerges) {
  const std::string llama3 =
      R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":)"
      R"("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},)"
      R"("behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
  auto t = LoadTokenizer(Write("tokenizer.json", HfJson(llama3)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(*(*t)->Encode("1234"), ElementsAre('1', '2', '3', '4'));  // "123" and "4": no merges
  // ignore_merges: "hell" is a token as a whole, though merging would get there too; "ll" has a
  // merge of rank 1 yet "hell" is found directly.
  std::string json = HfJson(llama3);
  json.replace(json.find(R"("model":{"type":"BPE",)"), 22, R"("model":{"type":"BPE","ignore_merges":true,)");
  t = LoadTokenizer(Write("tokenizer.json", json));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(*(*t)->Encode("hell hello"), ElementsAre(258, ' ', 259));
}

TEST_F(TokenizerTest, HuggingFaceRefusalsNameTheField) {
  struct Case {
    std::string json;
    std::string message;
  };
  const auto with = [this](const std::string& from, const std::string& to) {
    return absl::StrReplaceAll(HfJson(), {{from, to}});
  };
  const std::vector<Case> cases = {
      {with(R"("normalizer":null)", R"("normalizer":{"type":"NFC"})"), R"(normalizer.type: "NFC" is not supported)"},
      {HfJson(R"({"type":"Metaspace"})"), R"(pre_tokenizer.type: "Metaspace" is not supported)"},
      {HfJson(
           R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\d+"},"behavior":"Isolated"},)"
           R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})"),
       "pre_tokenizer.pretokenizers[0].pattern.Regex: only the split patterns"},
      {HfJson(R"({"type":"Whitespace"})"), R"(pre_tokenizer.type: "Whitespace" is not supported)"},
      {with(R"("type":"BPE")", R"("type":"WordPiece")"), R"(model.type: "WordPiece" is not supported)"},
      {with(R"("decoder":{"type":"ByteLevel"},)", ""), "decoder: a ByteLevel decoder is needed"},
      {with(R"("special":true)", R"("single_word":true)"), "added_tokens[0].single_word: true is not supported"},
      {with(R"("merges":[)", R"("dropout":0.1,"merges":[)"), "model.dropout: BPE dropout is not supported"},
  };
  for (const Case& c : cases) {
    const absl::Status s = LoadTokenizer(Write("tokenizer.json", c.json)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(s.message(), HasSubstr("tokenizer.json: " + c.message));
  }
}

TEST_F(TokenizerTest, LoadTokenizerTellsKindsApart) {
  EXPECT_EQ(LoadTokenizer((dir_ / "missing.json").string()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadTokenizer(Write("vocab.txt", "x")).status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status model = LoadTokenizer(Write("m.model", "not a model")).status();
#ifdef GRADSYNC_TEST_HAVE_SENTENCEPIECE
  EXPECT_EQ(model.code(), absl::StatusCode::kInvalidArgument) << model;
  EXPECT_THAT(model.message(), HasSubstr("m.model: is not a SentencePiece model"));
#else
  EXPECT_EQ(model.code(), absl::StatusCode::kUnimplemented) << model;
#endif
  EXPECT_EQ(KindName(TokenizerKind::kSentencePiece), "sentencepiece");
}

TEST(ByteTokenizer, OneIdPerByte) {
  const std::unique_ptr<Tokenizer> t = MakeByteTokenizer();
  EXPECT_EQ(t->kind(), TokenizerKind::kBytes);
  EXPECT_EQ(t->vocab_size(), 256);
  EXPECT_THAT(*t->Encode("a\xFF"), ElementsAre('a', 255));
  EXPECT_EQ(*t->Decode(std::vector<int32_t>{'a', 255}), "a\xFF");
  EXPECT_EQ(t->Decode(std::vector<int32_t>{256}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync::tokenizer
