// JsonString: every input gives valid JSON whose value is the input, with invalid UTF-8 bytes
// replaced. Read back with protobuf's JSON parser, not by comparing with our own idea of escaping.
#include "gradsync/core/json_string.h"

#include <string>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

constexpr char kFffd[] = "\xef\xbf\xbd";  // U+FFFD in UTF-8

// The string a JSON parser reads back from JsonString(s).
std::string RoundTrip(const std::string& s) {
  google::protobuf::Struct parsed;
  const std::string json = "{\"v\": " + JsonString(s) + "}";
  const auto status = google::protobuf::util::JsonStringToMessage(json, &parsed);
  EXPECT_TRUE(status.ok()) << status << " in " << json;
  return parsed.fields().count("v") ? parsed.fields().at("v").string_value() : "<missing>";
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("l1\nl2\tx\r"), "\"l1\\nl2\\tx\\r\"");
  EXPECT_EQ(JsonString(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  constexpr char kControls[] = "nul\0bell\a\b\f\x1b end";
  const std::string controls(kControls, sizeof(kControls) - 1);
  EXPECT_EQ(RoundTrip(controls), controls);
  EXPECT_EQ(RoundTrip("say \"hi\"\\ \n twice"), "say \"hi\"\\ \n twice");
}

TEST(JsonString, KeepsValidUtf8) {
  const std::string text = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf";  // é € 😀 U+10FFFF
  EXPECT_EQ(JsonString(text), "\"" + text + "\"");
  EXPECT_EQ(RoundTrip(text), text);
}

TEST(JsonString, ReplacesEachInvalidByteWithFffd) {
  const std::string r = kFffd;
  EXPECT_EQ(RoundTrip("a\xff"
                      "b"),
            "a" + r + "b");  // never in UTF-8
  EXPECT_EQ(RoundTrip("a\x80"
                      "b"),
            "a" + r + "b");                                 // stray continuation byte
  EXPECT_EQ(RoundTrip("\xc0\xaf"), r + r);                  // overlong '/'
  EXPECT_EQ(RoundTrip("\xe0\x80\xaf"), r + r + r);          // overlong, 3 bytes
  EXPECT_EQ(RoundTrip("\xed\xa0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(RoundTrip("\xf4\x90\x80\x80"), r + r + r + r);  // past U+10FFFF
  EXPECT_EQ(RoundTrip("end \xe2\x82"), "end " + r + r);     // truncated at the end
  EXPECT_EQ(RoundTrip("\xc3\xa9\xc3"
                      "x\xc3\xa9"),
            "\xc3\xa9" + r + "x\xc3\xa9");  // resumes after
}

}  // namespace
}  // namespace gradsync
