#include "tokenizer_json.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace gradsync::testing {
namespace {

// The bytes GPT-2's byte-level alphabet spells as themselves.
bool Printable(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

}  // namespace

std::string ByteLevelJson(int b) {
  int cp = b;
  if (!Printable(b)) {
    cp = 0x100;
    for (int x = 0; x < b; ++x) {
      if (!Printable(x)) ++cp;
    }
  }
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return absl::StrReplaceAll(out, {{"\\", "\\\\"}, {"\"", "\\\""}});
}

std::string TokenizerJson(int added_id) {
  std::string vocab;
  for (int b = 0; b < 256; ++b) absl::StrAppend(&vocab, "\"", ByteLevelJson(b), "\":", b, ",");
  absl::StrAppend(&vocab, R"("he":256,"ll":257)");
  return absl::StrCat(R"({"normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false},)",
                      R"("added_tokens":[{"id":)", added_id, R"(,"content":"<|end|>","special":true}],)",
                      R"("decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{)", vocab,
                      R"(},"merges":["h e","l l"]}})");
}

}  // namespace gradsync::testing
