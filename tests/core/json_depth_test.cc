// CheckJsonDepth: nesting bounded in one linear pass, strings and escapes skipped.
#include "gradsync/core/json_depth.h"

#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

TEST(CheckJsonDepth, CountsObjectsAndArraysOutsideStrings) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a": [1, {"b": [[]]}]})", "x", 5).ok());
  EXPECT_FALSE(CheckJsonDepth(R"({"a": [1, {"b": [[]]}]})", "x", 4).ok());
  // Brackets inside strings, escaped quotes included, are text.
  EXPECT_TRUE(CheckJsonDepth(R"({"a": "[[[[{{{{\"[[[["})", "x", 1).ok());
  EXPECT_TRUE(CheckJsonDepth("", "x").ok());
}

TEST(CheckJsonDepth, ADeepDocumentIsRefusedInLinearTimeNamingItsSource) {
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  const absl::Time start = absl::Now();
  const absl::Status s = CheckJsonDepth(deep, "tokenizer.json");
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "tokenizer.json: objects and arrays nest deeper than 64 levels (at byte 64)");
}

}  // namespace
}  // namespace gradsync
