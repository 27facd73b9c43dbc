// Parsing the stall drill's flag.
#include "fault_injection.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

using ::testing::HasSubstr;

TEST(FaultInjection, ParsesAStall) {
  auto f = ParseStallFault("rank=1,step=40,seconds=2.5");
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->has_value());
  EXPECT_EQ((*f)->rank, 1);
  EXPECT_EQ((*f)->step, 40);
  EXPECT_EQ((*f)->duration, absl::Milliseconds(2500));
  auto none = ParseStallFault("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(FaultInjection, BadSpecsNameThePart) {
  EXPECT_THAT(ParseStallFault("rank=1,step=40").status().message(), HasSubstr("missing seconds"));
  EXPECT_THAT(ParseStallFault("rank=1,step=x,seconds=2").status().message(), HasSubstr("\"step=x\""));
  EXPECT_THAT(ParseStallFault("rank=1,step=0,seconds=2").status().message(), HasSubstr("step counts from 1"));
  EXPECT_THAT(ParseStallFault("rank=1,step=3,seconds=2,bucket=1").status().message(), HasSubstr("only rank"));
}

}  // namespace
}  // namespace gradsync::worker
