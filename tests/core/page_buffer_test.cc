#include "gradsync/core/page_buffer.h"

#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

const size_t kPageFloats = static_cast<size_t>(sysconf(_SC_PAGESIZE)) / sizeof(float);
const int64_t kPageBytes = sysconf(_SC_PAGESIZE);

TEST(PageBufferTest, StartsZeroAndCostsNothingUntilWritten) {
  PageBuffer b(10 * kPageFloats + 3);
  ASSERT_EQ(b.size(), 10 * kPageFloats + 3);
  EXPECT_EQ(b.ResidentBytes(0, b.size()), 0);
  EXPECT_TRUE(std::all_of(b.span().begin(), b.span().end(), [](float x) { return x == 0.0f; }));
  // Reading maps the shared zero page at most; writing makes pages resident.
  std::fill(b.span().begin(), b.span().end(), 1.0f);
  EXPECT_EQ(b.ResidentBytes(0, b.size()), 11 * kPageBytes);
}

TEST(PageBufferTest, ReleaseZeroesTheRangeKeepsItsNeighboursAndReturnsTheWholePagesInside) {
  PageBuffer b(8 * kPageFloats);
  std::iota(b.span().begin(), b.span().end(), 1.0f);
  // From the middle of page 1 to the middle of page 6: pages 2..5 go back whole.
  const size_t begin = kPageFloats + kPageFloats / 2, end = 6 * kPageFloats + 7;
  b.Release(begin, end);
  // Before anything reads them (a read maps the zero page, which mincore counts).
  EXPECT_EQ(b.ResidentBytes(0, b.size()), 4 * kPageBytes);
  EXPECT_EQ(b.ResidentBytes(2 * kPageFloats, 6 * kPageFloats), 0);
  for (size_t i = 0; i < b.size(); ++i) {
    const float want = (i >= begin && i < end) ? 0.0f : static_cast<float>(i + 1);
    ASSERT_EQ(b.span()[i], want) << "element " << i;
  }
  // Written again, a released page holds the new values.
  b.span()[3 * kPageFloats] = 5.0f;
  EXPECT_EQ(b.span()[3 * kPageFloats], 5.0f);
}

TEST(PageBufferTest, ARangeWithinOnePageIsZeroedInPlace) {
  PageBuffer b(kPageFloats);
  std::fill(b.span().begin(), b.span().end(), 2.0f);
  b.Release(10, 20);
  EXPECT_EQ(b.span()[9], 2.0f);
  EXPECT_EQ(b.span()[10], 0.0f);
  EXPECT_EQ(b.span()[19], 0.0f);
  EXPECT_EQ(b.span()[20], 2.0f);
  EXPECT_EQ(b.ResidentBytes(0, b.size()), kPageBytes);
}

TEST(PageBufferTest, ARangeReachingTheEndReturnsTheLastPartialPage) {
  PageBuffer b(3 * kPageFloats + 5);
  std::fill(b.span().begin(), b.span().end(), 3.0f);
  b.Release(kPageFloats, b.size());
  EXPECT_EQ(b.ResidentBytes(0, b.size()), kPageBytes);
  EXPECT_EQ(b.span()[kPageFloats - 1], 3.0f);
  EXPECT_EQ(b.span().back(), 0.0f);
}

TEST(PageBufferTest, MovesOwnership) {
  PageBuffer a(100);
  a.span()[5] = 4.0f;
  PageBuffer b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(b.size(), 100u);
  EXPECT_EQ(b.span()[5], 4.0f);
  b.Release(0, 1000);  // clamped to the size
  EXPECT_EQ(b.span()[5], 0.0f);
}

}  // namespace
}  // namespace gradsync
