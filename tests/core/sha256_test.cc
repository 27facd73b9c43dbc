#include "gradsync/core/sha256.h"

#include <string>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

// FIPS 180-2's examples, as sha256sum prints them.
TEST(Sha256, MatchesTheStandardsExamples) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, PiecesHashAsTheWhole) {
  const std::string million(1000000, 'a');
  Sha256 hash;
  for (size_t at = 0; at < million.size(); at += 4093) hash.Update(absl::string_view(million).substr(at, 4093));
  EXPECT_EQ(hash.HexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // The object starts over after a digest.
  hash.Update("abc");
  EXPECT_EQ(hash.HexDigest(), Sha256Hex("abc"));
}

}  // namespace
}  // namespace gradsync
