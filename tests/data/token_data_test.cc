#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/data/dataset.h"
#include "gradsync/data/token_dataset.h"
#include "gradsync/data/token_shard.h"
#include "gtest/gtest.h"
#include "plans.h"

namespace gradsync::data {
namespace {

class TokenDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) / ("tokens-" + std::to_string(::getpid()) + "-" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void WriteBytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(Path(name), std::ios::binary) << bytes;
  }
  std::string Header(int32_t magic, int32_t version, int32_t count) const {
    std::vector<int32_t> h(kShardHeaderInts, 0);
    h[0] = magic;
    h[1] = version;
    h[2] = count;
    return std::string(reinterpret_cast<const char*>(h.data()), h.size() * sizeof(int32_t));
  }

  std::filesystem::path dir_;
};

TEST_F(TokenDataTest, ShardsRoundTripInLlmcFormat) {
  const std::vector<uint16_t> tokens = {1, 2, 3, 50256, 7};
  ASSERT_TRUE(WriteShard(Path("a.bin"), tokens).ok());
  EXPECT_EQ(std::filesystem::file_size(Path("a.bin")), 256 * 4 + 5 * 2);
  auto back = ReadShard(Path("a.bin"), 50257);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->width(), TokenWidth::kUint16);
  EXPECT_EQ(back->ToVector(), std::vector<uint32_t>(tokens.begin(), tokens.end()));
}

// Vocabularies past uint16 (Llama 3's 128,256 ids) take llm.c's uint32 layout: magic 20240801,
// version 7, four bytes a token. A dataset over such a shard hands the wide ids to the model.
TEST_F(TokenDataTest, WideVocabulariesRoundTripAsUint32Shards) {
  const std::vector<uint32_t> tokens = {1, 65535, 65536, 128255, 7, 100000, 3};
  ASSERT_TRUE(WriteShard(Path("wide.bin"), tokens).ok());
  EXPECT_EQ(std::filesystem::file_size(Path("wide.bin")), 256 * 4 + 7 * 4);
  std::ifstream in(Path("wide.bin"), std::ios::binary);
  int32_t header[3];
  in.read(reinterpret_cast<char*>(header), sizeof(header));
  EXPECT_EQ(header[0], 20240801);
  EXPECT_EQ(header[1], 7);
  EXPECT_EQ(header[2], 7);
  auto back = ReadShard(Path("wide.bin"), 128256);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->width(), TokenWidth::kUint32);
  EXPECT_EQ(back->ToVector(), tokens);
  EXPECT_NE(ReadShard(Path("wide.bin"), 100000).status().message().find("outside the vocabulary of 100000"),
            std::string::npos);

  auto ds = TokenDataset::Load({Path("wide.bin")}, /*shards=*/true, 3, 128256);
  ASSERT_TRUE(ds.ok()) << ds.status();
  nn::Batch b;
  const std::vector<int64_t> idx = {1, 0};
  ASSERT_TRUE((*ds)->Fill(idx, &b).ok());
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{128255, 7, 100000, 1, 65535, 65536}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{7, 100000, 3, 65535, 65536, 128255}));
}

TEST_F(TokenDataTest, BadShardsAreRefusedNamingFileAndProblem) {
  const std::string body(10, '\1');
  WriteBytes("magic.bin", Header(123, 1, 5) + body);
  WriteBytes("version.bin", Header(kUint16Shard.magic, 7, 5) + body);
  WriteBytes("version32.bin", Header(kUint32Shard.magic, 1, 5) + body);
  WriteBytes("short.bin", Header(kUint16Shard.magic, 1, 50) + body);
  WriteBytes("short32.bin", Header(kUint32Shard.magic, 7, 5) + body);  // 5 uint32 need 20 bytes
  WriteBytes("long.bin", Header(kUint16Shard.magic, 1, 2) + body);
  WriteBytes("empty.bin", Header(kUint16Shard.magic, 1, 0));
  WriteBytes("header.bin", "tiny");
  ASSERT_TRUE(WriteShard(Path("vocab.bin"), std::vector<uint16_t>{1, 2, 300, 4}).ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"magic.bin", "not a token shard (its header lacks the magic number 20240520 or 20240801)"},
      {"version.bin", "unsupported shard version (magic 20240520 goes with version 1)"},
      {"version32.bin", "unsupported shard version (magic 20240801 goes with version 7)"},
      {"short.bin", "truncated: the file holds fewer tokens than its header announces"},
      {"short32.bin", "truncated: the file holds fewer tokens than its header announces"},
      {"long.bin", "bytes follow the tokens the header announces"},
      {"empty.bin", "holds no tokens"},
      {"header.bin", "shorter than a shard's header of 1024 bytes"},
      {"vocab.bin", "holds a token outside the vocabulary of 256"}};
  for (const auto& [file, problem] : cases) {
    auto r = ReadShard(Path(file), 256);
    ASSERT_FALSE(r.ok()) << file;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << file;
    EXPECT_NE(r.status().message().find(Path(file)), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find(problem), std::string::npos) << r.status();
  }
  EXPECT_EQ(ReadShard(Path("missing.bin"), 256).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TokenDataTest, WriteShardsSplitsInOrderWithLlmcNames) {
  std::vector<uint16_t> tokens(10);
  for (int i = 0; i < 10; ++i) tokens[i] = static_cast<uint16_t>(i);
  auto written = WriteShards(dir_.string(), "train", TokenStream(tokens), 4);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 3u);
  EXPECT_EQ((*written)[0].path, Path("train_000000.bin"));
  EXPECT_EQ((*written)[2].path, Path("train_000002.bin"));
  EXPECT_EQ((*written)[0].tokens, 4) << "4, 3, 3 rather than 4, 4, 2";
  EXPECT_EQ((*written)[2].tokens, 3);
  auto last = ReadShard(Path("train_000002.bin"), 256);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->ToVector(), (std::vector<uint32_t>{7, 8, 9}));
  auto ds = TokenDataset::Load({Path("train_*.bin")}, /*shards=*/true, 2, 256);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->total_tokens(), 10);

  EXPECT_EQ(WriteShards(dir_.string(), "val", TokenStream(), 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteShards(dir_.string(), "val", TokenStream(tokens), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status no_dir = WriteShards(Path("absent"), "val", TokenStream(tokens), 4).status();
  EXPECT_NE(no_dir.message().find(Path("absent")), std::string::npos) << no_dir;
}

TEST_F(TokenDataTest, TextWindowsPredictTheNextByte) {
  WriteBytes("a.txt", "abcdefghij");  // 10 bytes, seq 3: windows at 0, 3, 6 (the last needs 7..9)
  auto ds = TokenDataset::Load({Path("a.txt")}, /*shards=*/false, 3, 256);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(), 3);
  nn::Batch b;
  const std::vector<int64_t> idx = {2, 0};
  ASSERT_TRUE((*ds)->Fill(idx, &b).ok());
  EXPECT_EQ(b.size, 2);
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{'g', 'h', 'i', 'a', 'b', 'c'}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{'h', 'i', 'j', 'b', 'c', 'd'}));
}

TEST_F(TokenDataTest, WindowsNeverCrossFilesAndGlobsExpandInOrder) {
  ASSERT_TRUE(WriteShard(Path("train_000.bin"), std::vector<uint16_t>{1, 2, 3, 4, 5}).ok());
  ASSERT_TRUE(WriteShard(Path("train_001.bin"), std::vector<uint16_t>{9, 8, 7}).ok());
  auto ds = TokenDataset::Load({Path("train_*.bin")}, /*shards=*/true, 2, 256);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(), 3);  // two from the first file, one from the second
  EXPECT_EQ((*ds)->total_tokens(), 8);
  nn::Batch b;
  const std::vector<int64_t> idx = {2};
  ASSERT_TRUE((*ds)->Fill(idx, &b).ok());
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{9, 8}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{8, 7}));
}

TEST_F(TokenDataTest, DataTooSmallOrMissingFailsAtLoad) {
  WriteBytes("tiny.txt", "ab");
  WriteBytes("empty.txt", "");
  auto tiny = TokenDataset::Load({Path("tiny.txt")}, false, 8, 256);
  EXPECT_NE(tiny.status().message().find("too short to fill one sample of 9 tokens"), std::string::npos)
      << tiny.status();
  auto empty = TokenDataset::Load({Path("empty.txt")}, false, 8, 256);
  EXPECT_NE(empty.status().message().find("empty file"), std::string::npos) << empty.status();
  auto none = TokenDataset::Load({Path("nothing_*.bin")}, true, 8, 256);
  EXPECT_NE(none.status().message().find("matches no file"), std::string::npos) << none.status();
  auto vocab = TokenDataset::Load({Path("tiny.txt")}, false, 1, 512);
  EXPECT_NE(vocab.status().message().find("bytewise"), std::string::npos) << vocab.status();
}

// A glob through a directory that cannot be read names that directory, absolute: a relative
// pattern is read from the directory of whichever process reads it.
TEST_F(TokenDataTest, AGlobThroughAMissingDirectoryNamesTheDirectory) {
  auto missing = ExpandPaths({Path("no-such-dir/train_*.bin")});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot list the directory " + Path("no-such-dir") + ": "),
            std::string::npos)
      << missing.status();

  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir_);
  auto relative = ExpandPaths({"gone/*.txt"});
  std::filesystem::current_path(cwd);
  ASSERT_FALSE(relative.ok());
  EXPECT_NE(relative.status().message().find("\"gone/*.txt\": cannot list the directory " + Path("gone")),
            std::string::npos)
      << relative.status();
}

// A shard's errors reach the job's author: they say what is wrong, never what the file holds.
// Here the header's fields, the file's size and an out-of-vocabulary token are all distinctive
// numbers, and none of them appears in any message.
TEST_F(TokenDataTest, ShardErrorsNeverQuoteTheFilesContentsOrSize) {
  const std::string body(2 * 4321, '\x7f');                     // 4321 tokens of 0x7f7f = 32639
  WriteBytes("magic.bin", Header(1094861636, 1, 4321) + body);  // magic "DCBA"
  WriteBytes("version.bin", Header(kUint16Shard.magic, 777001, 4321) + body);
  WriteBytes("short.bin", Header(kUint16Shard.magic, 1, 98765) + body);
  WriteBytes("long.bin", Header(kUint16Shard.magic, 1, 1234) + body);
  WriteBytes("header.bin", std::string(777, 'Q'));
  WriteBytes("vocab.bin", Header(kUint16Shard.magic, 1, 4321) + body);
  const std::vector<std::string> secrets = {"1094861636", "DCBA", "777001", "98765", "4321", "1234",
                                            "777",        "QQQQ", "32639",  "8642",  "9666", "6174"};
  for (const char* file : {"magic.bin", "version.bin", "short.bin", "long.bin", "header.bin", "vocab.bin"}) {
    const absl::Status s = ReadShard(Path(file), 256).status();
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << file << ": " << s;
    const std::string message(s.message().substr(Path(file).size()));
    for (const std::string& secret : secrets) {
      EXPECT_EQ(message.find(secret), std::string::npos) << file << " quotes " << secret << ": " << s;
    }
  }
}

// A path in a spec may name anything the worker can open. Each of these once killed the worker (an
// uncaught std::ios_base::failure from reading a directory) or read without end (/dev/zero, a
// fifo with no writer, a huge file); each is now refused, naming the path, before a byte is read.
TEST_F(TokenDataTest, OnlyRegularFilesUpToTheCapAreRead) {
  std::filesystem::create_directories(Path("subdir"));
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  // Sparse: one byte over the cap costs no disk and is refused by its size, unread.
  std::ofstream(Path("huge.txt")).put('x');
  std::filesystem::resize_file(Path("huge.txt"), static_cast<uintmax_t>(kMaxDataFileBytes) + 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {Path("subdir"), "is a directory"},
      {Path("."), "is a directory"},  // what a glob such as "dir/.*" matches first
      {"/dev/zero", "is not a regular file"},
      {Path("fifo"), "is not a regular file"},
      {Path("huge.txt"), "is larger than a data file may be (1024 MiB)"}};
  for (const auto& [path, problem] : cases) {
    for (bool shards : {false, true}) {
      auto ds = TokenDataset::Load({path}, shards, 4, 256);
      ASSERT_FALSE(ds.ok()) << path;
      EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument) << ds.status();
      // Shards have no size cap (they are streamed): the huge file is refused by its header.
      const std::string expected = shards && path == Path("huge.txt") ? "not a token shard" : problem;
      EXPECT_NE(ds.status().message().find(path + ": " + expected), std::string::npos) << ds.status();
    }
  }
  auto dots = TokenDataset::Load({Path(".*")}, false, 4, 256);
  EXPECT_NE(dots.status().message().find("is a directory"), std::string::npos) << dots.status();
}

// Shards are streamed, with 64-bit counts and offsets: three sparse shards of 2^31 - 1 uint32
// tokens each (8 GiB apparent, no disk), 6.4 billion windows of one token, load without reading
// them, and the last window of the last file reads the token written at its end (a read more than
// 4 GiB into a file, at a sample index beyond 2^32).
TEST_F(TokenDataTest, ShardsBeyondThirtyTwoBitsLoadWithoutBeingReadAndServeTheirLastWindow) {
  constexpr int64_t kCount = std::numeric_limits<int32_t>::max();
  std::vector<std::string> paths;
  for (int f = 0; f < 3; ++f) {
    paths.push_back(Path(absl::StrCat("sparse_", f, ".bin")));
    WriteBytes(absl::StrCat("sparse_", f, ".bin"), Header(kUint32Shard.magic, kUint32Shard.version, kCount));
    std::filesystem::resize_file(paths.back(), static_cast<uintmax_t>(1024 + kCount * 4));
  }
  const uint32_t last = 70001;
  {
    std::fstream out(paths.back(), std::ios::in | std::ios::out | std::ios::binary);
    out.seekp(1024 + (kCount - 1) * 4);
    out.write(reinterpret_cast<const char*>(&last), sizeof(last));
  }
  auto ds = TokenDataset::Load(paths, /*shards=*/true, /*seq_len=*/1, /*vocab_size=*/100000);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(), 3 * (kCount - 1));
  EXPECT_GT((*ds)->size(), int64_t{1} << 32);
  EXPECT_EQ((*ds)->total_tokens(), 3 * kCount);
  nn::Batch b;
  ASSERT_TRUE((*ds)->Fill(std::vector<int64_t>{(*ds)->size() - 1, 0}, &b).ok());
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{static_cast<int32_t>(last), 0}));
}

// A gpt-tiny spec shrunk to a context of `seq_len` tokens, with no data source yet.
gradsync::v1::JobSpec TinyGptSpec(int seq_len) {
  gradsync::v1::JobSpec spec;
  spec.mutable_model()->set_preset("gpt-tiny");
  spec.mutable_model()->mutable_transformer()->set_seq_len(seq_len);
  return spec;
}

TEST_F(TokenDataTest, CreateDatasetReadsTextAndShardsWithTheModelsContext) {
  WriteBytes("a.txt", "abcdefghij");
  gradsync::v1::JobSpec spec = TinyGptSpec(3);
  spec.mutable_data()->mutable_text()->add_paths(Path("*.txt"));
  auto text = gradsync::testing::DatasetOf(spec);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ((*text)->size(), 3);
  nn::Batch b;
  const std::vector<int64_t> idx = {1};
  ASSERT_TRUE((*text)->Fill(idx, &b).ok());
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{'d', 'e', 'f'}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{'e', 'f', 'g'}));

  ASSERT_TRUE(WriteShard(Path("train_000.bin"), std::vector<uint16_t>{1, 2, 3, 4, 5, 6, 7}).ok());
  spec = TinyGptSpec(2);
  spec.mutable_data()->mutable_shards()->add_paths(Path("train_000.bin"));
  auto shards = gradsync::testing::DatasetOf(spec);
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_EQ((*shards)->size(), 3);
  ASSERT_TRUE((*shards)->Fill(idx, &b).ok());
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(b.targets, (std::vector<int32_t>{4, 5}));
}

TEST_F(TokenDataTest, CreateDatasetRefusesBadCombinationsAndNamesMissingFiles) {
  WriteBytes("a.txt", "abcdefghij");
  gradsync::v1::JobSpec synthetic = TinyGptSpec(3);
  synthetic.mutable_data()->mutable_synthetic()->set_num_samples(10);
  EXPECT_NE(
      gradsync::testing::DatasetOf(synthetic).status().message().find("a transformer needs data.text or data.shards"),
      std::string::npos);

  gradsync::v1::JobSpec mlp;
  mlp.mutable_model()->set_preset("mlp");
  mlp.mutable_data()->mutable_text()->add_paths(Path("a.txt"));
  EXPECT_EQ(gradsync::testing::DatasetOf(mlp).status(),
            absl::InvalidArgumentError("data.text: token data needs a transformer preset, got model.preset \"mlp\""));

  gradsync::v1::JobSpec no_paths = TinyGptSpec(3);
  no_paths.mutable_data()->mutable_shards();
  EXPECT_EQ(gradsync::testing::DatasetOf(no_paths).status(),
            absl::InvalidArgumentError("data.shards.paths: must list at least one file"));

  gradsync::v1::JobSpec missing = TinyGptSpec(3);
  missing.mutable_data()->mutable_text()->add_paths(Path("a.txt"));
  missing.mutable_data()->mutable_text()->add_paths(Path("missing.txt"));
  const absl::Status status = gradsync::testing::DatasetOf(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(Path("missing.txt")), std::string::npos) << status;

  gradsync::v1::JobSpec vocab = TinyGptSpec(3);
  vocab.mutable_model()->mutable_transformer()->set_vocab_size(512);
  vocab.mutable_data()->mutable_text()->add_paths(Path("a.txt"));
  EXPECT_NE(gradsync::testing::DatasetOf(vocab).status().message().find("bytewise"), std::string::npos);

  ASSERT_TRUE(WriteShard(Path("big.bin"), std::vector<uint16_t>{1, 2, 300, 4, 5}).ok());
  gradsync::v1::JobSpec tokens = TinyGptSpec(2);
  tokens.mutable_data()->mutable_shards()->add_paths(Path("big.bin"));
  // Shards are streamed: a token is checked against the vocabulary when a batch reads it.
  auto streamed = gradsync::testing::DatasetOf(tokens);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  nn::Batch batch;
  const absl::Status out_of_vocab = (*streamed)->Fill(std::vector<int64_t>{0}, &batch);
  EXPECT_EQ(out_of_vocab.code(), absl::StatusCode::kInvalidArgument) << out_of_vocab;
  EXPECT_NE(out_of_vocab.message().find(Path("big.bin")), std::string::npos) << out_of_vocab;
  EXPECT_NE(out_of_vocab.message().find("outside the vocabulary of 256"), std::string::npos) << out_of_vocab;
}

}  // namespace
}  // namespace gradsync::data
