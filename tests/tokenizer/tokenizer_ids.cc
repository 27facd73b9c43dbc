// tokenizer_ids: what gradsync's tokenizers make of a file, for the reference tests to compare
// with independent tokenizers.
//   tokenizer_ids TOKENIZER FILE            the ids of the file's bytes, space-separated, one line
//   tokenizer_ids --lines TOKENIZER FILE    the ids of each line (without its '\n'), a line each
//   tokenizer_ids --decode TOKENIZER FILE   the bytes of the ids the file lists (space-separated)
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "gradsync/tokenizer/tokenizer.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "tokenizer_ids: %s\n", message.c_str());
  return 1;
}

bool PrintIds(const gradsync::tokenizer::Tokenizer& tokenizer, std::string_view text) {
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text);
  if (!ids.ok()) return false;
  for (size_t i = 0; i < ids->size(); ++i) std::printf(i == 0 ? "%d" : " %d", (*ids)[i]);
  std::printf("\n");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string mode;
  if (!args.empty() && args[0].starts_with("--")) {
    mode = args[0];
    args.erase(args.begin());
  }
  if (args.size() != 2) return Fail("usage: tokenizer_ids [--lines|--decode] TOKENIZER FILE");
  auto tokenizer = gradsync::tokenizer::LoadTokenizer(args[0]);
  if (!tokenizer.ok()) return Fail(std::string(tokenizer.status().ToString()));
  std::ifstream in(args[1], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return Fail("cannot read " + args[1]);
  if (mode == "--decode") {
    std::istringstream list(text);
    std::vector<int32_t> ids;
    for (int32_t id; list >> id;) ids.push_back(id);
    absl::StatusOr<std::string> bytes = (*tokenizer)->Decode(ids);
    if (!bytes.ok()) return Fail(std::string(bytes.status().ToString()));
    std::fwrite(bytes->data(), 1, bytes->size(), stdout);
    return 0;
  }
  if (mode == "--lines") {
    for (size_t start = 0; start < text.size();) {
      const size_t end = std::min(text.find('\n', start), text.size());
      if (!PrintIds(**tokenizer, std::string_view(text).substr(start, end - start))) return Fail("encoding failed");
      start = end + 1;
    }
    return 0;
  }
  if (!mode.empty()) return Fail("unknown option " + mode);
  return PrintIds(**tokenizer, text) ? 0 : Fail("encoding failed");
}
