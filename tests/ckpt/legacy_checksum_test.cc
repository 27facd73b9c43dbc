// Checkpoints across the change of checksum: parts written with FNV-1a (version 2, "fnv1a64:"
// digests in the manifest) still verify and load; a corrupted byte is caught under either
// algorithm; a digest is checked with the algorithm its prefix names; an unknown prefix is refused
// naming the file and the prefix.
//
// The FNV-1a parts are made as the previous writer made them: the version 3 bytes with version 2
// in the header and an FNV-1a trailer (the layouts are otherwise the same), their manifest digest
// FNV-1a of the whole file, computed here with gradsync/core's Fnv1a64, not with the checksum
// code under test.
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_format.h"
#include "ckpt_test_util.h"
#include "gmock/gmock.h"
#include "gradsync/ckpt/checksum.h"
#include "gradsync/core/digest.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t Fnv(std::string_view bytes) { return Fnv1a64(std::as_bytes(std::span(bytes.data(), bytes.size()))); }

// Rewrites the version 3 part at `path` as a version 2 part with an FNV-1a trailer; returns the
// manifest digest the previous writer recorded for it.
std::string RewriteAsFnvPart(const std::string& path) {
  std::string bytes = Contents(path);
  EXPECT_EQ(bytes[8], 3) << "the writer's version";
  const uint32_t version = 2;
  std::memcpy(bytes.data() + 8, &version, sizeof(version));
  bytes.resize(bytes.size() - sizeof(uint64_t));
  const uint64_t trailer = Fnv(bytes);
  bytes.append(reinterpret_cast<const char*>(&trailer), sizeof(trailer));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return absl::StrFormat("fnv1a64:%016x", Fnv(bytes));
}

class LegacyChecksumTest : public TempDirTest {
 protected:
  // A committed 2-rank checkpoint at step 12, its parts as the FNV-1a writer left them.
  v1::CheckpointManifest WriteFnvCheckpoint() {
    v1::CheckpointManifest m = WriteCheckpoint(FreshDir("root"), 12, 2, /*commit=*/false);
    for (v1::CheckpointPart& part : *m.mutable_parts()) {
      part.set_checksum(RewriteAsFnvPart(m.dir() + "/" + part.file()));
    }
    EXPECT_TRUE(WriteManifest(m.dir(), m).ok());
    return m;
  }
};

TEST_F(LegacyChecksumTest, NewPartsCarryXxh3DigestsAndVersion3) {
  const v1::CheckpointManifest m = WriteCheckpoint(FreshDir("root"), 12, 2);
  for (const v1::CheckpointPart& part : m.parts()) {
    EXPECT_THAT(part.checksum(), StartsWith("xxh3-64:"));
    EXPECT_EQ(part.checksum().size(), 8u + 16u);
    EXPECT_EQ(Contents(m.dir() + "/" + part.file())[8], 3);
  }
  const absl::StatusOr<v1::CheckpointManifest> back = ReadManifest(m.dir());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->parts(1).checksum(), m.parts(1).checksum());
}

TEST_F(LegacyChecksumTest, AnFnvCheckpointVerifiesAndLoads) {
  const v1::CheckpointManifest m = WriteFnvCheckpoint();
  EXPECT_THAT(m.parts(0).checksum(), StartsWith("fnv1a64:"));
  EXPECT_TRUE(VerifyCheckpoint(m.dir()).ok()) << VerifyCheckpoint(m.dir());
  for (const v1::CheckpointPart& part : m.parts()) {
    absl::StatusOr<RankState> read = ReadRankPart(m.dir(), part);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->rank, part.rank());
    EXPECT_EQ(read->params, SmallState(part.rank()).params);
  }
  absl::StatusOr<RankState> state = ReadCheckpointState(m, 1);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->step, 12);
  EXPECT_EQ(state->adam_v, SmallState(1).adam_v);
}

// A digest is checked by the algorithm it names, whatever the part's own trailer uses.
TEST_F(LegacyChecksumTest, AnFnvDigestOfANewPartIsCheckedWithFnv) {
  v1::CheckpointManifest m = WriteCheckpoint(FreshDir("root"), 12, 1);
  const std::string path = m.dir() + "/" + m.parts(0).file();
  m.mutable_parts(0)->set_checksum(absl::StrFormat("fnv1a64:%016x", Fnv(Contents(path))));
  ASSERT_TRUE(WriteManifest(m.dir(), m).ok());
  EXPECT_TRUE(VerifyCheckpoint(m.dir()).ok()) << VerifyCheckpoint(m.dir());
  EXPECT_TRUE(ReadRankPart(m.dir(), m.parts(0)).ok());

  // The same value under the other algorithm's name is a mismatch.
  m.mutable_parts(0)->set_checksum("xxh3-64:" + m.parts(0).checksum().substr(8));
  ASSERT_TRUE(WriteManifest(m.dir(), m).ok());
  EXPECT_THAT(VerifyCheckpoint(m.dir()).message(), HasSubstr("differs from the manifest"));
  EXPECT_THAT(ReadRankPart(m.dir(), m.parts(0)).status().message(), HasSubstr("differs from the manifest"));
}

class CorruptionTest : public LegacyChecksumTest, public ::testing::WithParamInterface<bool> {};

// One byte of rank 1's tensors flipped: the manifest's digest, the part's trailer and the resume
// each report it, naming the file.
TEST_P(CorruptionTest, AFlippedByteIsDetected) {
  const bool fnv = GetParam();
  const v1::CheckpointManifest m = fnv ? WriteFnvCheckpoint() : WriteCheckpoint(FreshDir("root"), 12, 2);
  const std::string path = m.dir() + "/" + m.parts(1).file();
  FlipByte(path, -20);

  const absl::Status verified = VerifyCheckpoint(m.dir());
  EXPECT_EQ(verified.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(verified.message(), HasSubstr(path));
  EXPECT_THAT(verified.message(), HasSubstr("differs from the manifest"));

  const absl::StatusOr<RankState> part = ReadRankPart(path);
  EXPECT_EQ(part.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(part.status().message(), HasSubstr("checksum mismatch"));
  EXPECT_THAT(part.status().message(), HasSubstr(fnv ? "by fnv1a64" : "by xxh3-64"));

  const absl::StatusOr<RankState> resumed = ReadCheckpointState(m, 0);
  EXPECT_EQ(resumed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(resumed.status().message(), HasSubstr(path));
}

INSTANTIATE_TEST_SUITE_P(BothAlgorithms, CorruptionTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Fnv1a64" : "Xxh3_64"; });

TEST_F(LegacyChecksumTest, AnUnknownPrefixIsRefusedNamingTheFileAndThePrefix) {
  v1::CheckpointManifest m = WriteCheckpoint(FreshDir("root"), 12, 2);
  const std::string path = m.dir() + "/" + m.parts(1).file();
  m.mutable_parts(1)->set_checksum("sha256:" + std::string(64, 'a'));
  ASSERT_TRUE(WriteManifest(m.dir(), m).ok());

  for (const absl::Status& s :
       {VerifyCheckpoint(m.dir()), ReadRankPart(m.dir(), m.parts(1)).status(), ReadCheckpointState(m, 0).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(s.message(), HasSubstr(path));
    EXPECT_THAT(s.message(), HasSubstr("checksum algorithm \"sha256\" is unknown"));
  }
  // The part itself is sound: only the manifest's digest is unusable.
  EXPECT_TRUE(ReadRankPart(path).ok());

  m.mutable_parts(1)->set_checksum("");
  ASSERT_TRUE(WriteManifest(m.dir(), m).ok());
  EXPECT_THAT(VerifyCheckpoint(m.dir()).message(), HasSubstr("names no algorithm"));
}

}  // namespace
}  // namespace gradsync::ckpt::testing
