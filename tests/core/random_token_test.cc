#include "gradsync/core/random_token.h"

#include <set>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

TEST(RandomToken, IsHexOfTheAskedLengthAndNeverRepeats) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string token = NewRandomToken();
    ASSERT_EQ(token.size(), 64u);
    ASSERT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
    ASSERT_TRUE(seen.insert(token).second) << "repeated token " << token;
  }
  EXPECT_EQ(NewRandomToken(4).size(), 8u);
}

TEST(RandomToken, UsesEveryHexDigit) {
  // 64 KiB of random bytes leave no hex digit out unless the encoding or the source is broken.
  const std::string token = NewRandomToken(1 << 16);
  for (char c : std::string("0123456789abcdef")) EXPECT_NE(token.find(c), std::string::npos) << c;
}

}  // namespace
}  // namespace gradsync
