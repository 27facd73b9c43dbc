// The checksums of checkpoint files: known answers for both algorithms, pieces fed in any cut
// equal to the whole, real part files against xxhsum (Debian's `xxhash`, the independent
// reference implementation of XXH3), and digest prefixes parsed or refused by name.
#include "gradsync/ckpt/checksum.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/core/rng.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt::testing {
namespace {

using ::testing::HasSubstr;

uint64_t OneShot(ChecksumAlgorithm algorithm, std::string_view text) {
  StreamingChecksum sum(algorithm);
  sum.Update(std::as_bytes(std::span(text.data(), text.size())));
  return sum.Value();
}

std::string PseudoRandomBytes(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng.NextU64());
  return out;
}

// xxhsum -H3's digest of `path` as 16 hex digits, or "" when xxhsum cannot be run.
std::string Xxhsum(const std::string& path) {
  std::FILE* p = ::popen(absl::StrCat("xxhsum -H3 '", path, "' 2>/dev/null").c_str(), "r");
  if (p == nullptr) return "";
  char line[4096] = {};
  const bool got = std::fgets(line, sizeof(line), p) != nullptr;
  if (::pclose(p) != 0 || !got) return "";
  // "XXH3 (path) = <hex>" (BSD style, what -H3 prints) or "<hex>  path" (GNU style).
  std::string text(line);
  const size_t eq = text.rfind(" = ");
  text = eq != std::string::npos ? text.substr(eq + 3) : text.substr(0, text.find(' '));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

bool HaveXxhsum() { return std::system("xxhsum --version > /dev/null 2>&1") == 0; }

// FNV-1a 64: the published vectors of its authors' test suite.
TEST(ChecksumTest, Fnv1a64KnownAnswers) {
  EXPECT_EQ(OneShot(ChecksumAlgorithm::kFnv1a64, ""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(OneShot(ChecksumAlgorithm::kFnv1a64, "a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(OneShot(ChecksumAlgorithm::kFnv1a64, "foobar"), 0x85944171f73967e8ULL);
}

// XXH3_64bits with seed 0: the empty input's value is xxHash's published sanity value; all three
// are what `xxhsum -H3` 0.8.1 prints for files holding these bytes.
TEST(ChecksumTest, Xxh3KnownAnswers) {
  EXPECT_EQ(OneShot(ChecksumAlgorithm::kXxh3_64, ""), 0x2d06800538d394c2ULL);
  EXPECT_EQ(OneShot(ChecksumAlgorithm::kXxh3_64, "abc"), 0x78af5f94892f3950ULL);
  EXPECT_EQ(OneShot(ChecksumAlgorithm::kXxh3_64, "The quick brown fox jumps over the lazy dog"), 0xce7d19a5418fb365ULL);
}

TEST(ChecksumTest, DigestsNameTheirAlgorithm) {
  EXPECT_EQ(FormatDigest(ChecksumAlgorithm::kXxh3_64, 0x2d06800538d394c2ULL), "xxh3-64:2d06800538d394c2");
  EXPECT_EQ(FormatDigest(ChecksumAlgorithm::kFnv1a64, 0xabULL), "fnv1a64:00000000000000ab");
  StreamingChecksum sum(ChecksumAlgorithm::kXxh3_64);
  EXPECT_EQ(sum.Digest(), "xxh3-64:2d06800538d394c2");
}

// Cuts that straddle XXH3's internal boundaries (16, 128 and 240 bytes, its 256-byte buffer, its
// 1 KiB blocks): under both algorithms every cut gives the value of the whole, also when the
// value is read between pieces.
TEST(ChecksumTest, AnyCutGivesTheValueOfTheWhole) {
  const std::string data = PseudoRandomBytes(100003, 7);
  for (ChecksumAlgorithm algorithm : {ChecksumAlgorithm::kXxh3_64, ChecksumAlgorithm::kFnv1a64}) {
    const uint64_t whole = OneShot(algorithm, data);
    for (size_t piece : {1, 7, 16, 63, 129, 241, 255, 256, 1023, 4096, 65537}) {
      SCOPED_TRACE(absl::StrCat(ChecksumName(algorithm), " in pieces of ", piece));
      StreamingChecksum sum(algorithm);
      for (size_t at = 0; at < data.size(); at += piece) {
        sum.Update(std::as_bytes(std::span(data.data() + at, std::min(piece, data.size() - at))));
        (void)sum.Value();
      }
      EXPECT_EQ(sum.Value(), whole);
    }
  }
}

TEST(ChecksumTest, AMovedChecksumCarriesOn) {
  const std::string data = PseudoRandomBytes(5000, 3);
  StreamingChecksum first(ChecksumAlgorithm::kXxh3_64);
  first.Update(std::as_bytes(std::span(data.data(), 1000)));
  StreamingChecksum second = std::move(first);
  second.Update(std::as_bytes(std::span(data.data() + 1000, data.size() - 1000)));
  EXPECT_EQ(second.Value(), OneShot(ChecksumAlgorithm::kXxh3_64, data));
  StreamingChecksum third(ChecksumAlgorithm::kFnv1a64);
  third = std::move(second);
  EXPECT_EQ(third.algorithm(), ChecksumAlgorithm::kXxh3_64);
  EXPECT_EQ(third.Value(), OneShot(ChecksumAlgorithm::kXxh3_64, data));
}

TEST(ChecksumTest, PrefixesAreParsedAndUnknownOnesRefusedByName) {
  EXPECT_EQ(*DigestAlgorithm("xxh3-64:2d06800538d394c2", "f"), ChecksumAlgorithm::kXxh3_64);
  EXPECT_EQ(*DigestAlgorithm("fnv1a64:cbf29ce484222325", "f"), ChecksumAlgorithm::kFnv1a64);

  absl::StatusOr<ChecksumAlgorithm> unknown = DigestAlgorithm("sha256:0123", "/ckpt/rank-00000.bin");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(unknown.status().message(), HasSubstr("/ckpt/rank-00000.bin"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("\"sha256\""));
  // The prefix is the whole name: no case folding, no bare hex.
  EXPECT_THAT(DigestAlgorithm("XXH3-64:2d06800538d394c2", "f").status().message(), HasSubstr("\"XXH3-64\""));
  absl::StatusOr<ChecksumAlgorithm> bare = DigestAlgorithm("2d06800538d394c2", "/ckpt/rank-00001.bin");
  EXPECT_EQ(bare.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bare.status().message(), HasSubstr("/ckpt/rank-00001.bin"));
  EXPECT_THAT(bare.status().message(), HasSubstr("names no algorithm"));
}

class ChecksumAgainstXxhsumTest : public TempDirTest {
 protected:
  void SetUp() override {
    if (!HaveXxhsum()) GTEST_SKIP() << "xxhsum is not installed (Debian package xxhash; scripts/install-deps.sh)";
  }
};

// Inputs on both sides of XXH3's short-input paths and of its long-input blocks, hashed in
// 1000-byte pieces here and whole by xxhsum.
TEST_F(ChecksumAgainstXxhsumTest, AgreesWithXxhsumOnFilesOfManySizes) {
  const std::string dir = FreshDir("sizes");
  for (size_t n : {0, 3, 16, 17, 128, 129, 240, 241, 1024, 1025, 100000, 3 << 20}) {
    SCOPED_TRACE(absl::StrCat(n, " bytes"));
    const std::string data = PseudoRandomBytes(n, n);
    const std::string path = absl::StrCat(dir, "/", n, ".bin");
    std::ofstream(path, std::ios::binary) << data;
    StreamingChecksum sum(ChecksumAlgorithm::kXxh3_64);
    for (size_t at = 0; at < n; at += 1000) {
      sum.Update(std::as_bytes(std::span(data.data() + at, std::min<size_t>(1000, n - at))));
    }
    EXPECT_EQ(sum.Digest(), "xxh3-64:" + Xxhsum(path));
  }
}

// A part written by WriteRankPart: the manifest's digest is xxhsum's of the whole file, and the
// trailer xxhsum's of every byte before it.
TEST_F(ChecksumAgainstXxhsumTest, APartsDigestAndTrailerAreXxhsums) {
  const std::string dir = FreshDir("step");
  absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir, SmallState());
  ASSERT_TRUE(part.ok()) << part.status();
  const std::string path = dir + "/" + part->file();
  EXPECT_EQ(part->checksum(), "xxh3-64:" + Xxhsum(path));

  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t trailer = 0;
  std::memcpy(&trailer, bytes.data() + bytes.size() - sizeof(trailer), sizeof(trailer));
  std::ofstream(dir + "/content", std::ios::binary) << bytes.substr(0, bytes.size() - sizeof(trailer));
  EXPECT_EQ(FormatDigest(ChecksumAlgorithm::kXxh3_64, trailer), "xxh3-64:" + Xxhsum(dir + "/content"));
}

}  // namespace
}  // namespace gradsync::ckpt::testing
