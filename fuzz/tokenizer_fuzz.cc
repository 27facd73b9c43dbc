// The tokenizers as `gradsync data prepare` and `generate` load them from files someone else wrote:
// Hugging Face's tokenizer.json, or GPT-2's encoder.json + vocab.bpe. (SentencePiece models are
// read by the library in a child process first, tokenizer tests; the sanitizers of this build do
// not go with the plugin's RTLD_DEEPBIND.)
//
// Input: a mode byte (bit 0: GPT-2's pair), then the file, or for the pair encoder.json and
// vocab.bpe separated by a NUL byte, then optionally a NUL byte and text to encode. A tokenizer
// that loads encodes the text (and a fixed one) into ids within its vocabulary, and decodes them.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "gradsync/tokenizer/tokenizer.h"
#include "tokenizer_exercise.h"

namespace {

// Splits `rest` at its first NUL byte: the part before, and after it (empty without one).
std::pair<std::string_view, std::string_view> SplitAtNul(std::string_view rest) {
  const size_t nul = rest.find('\0');
  if (nul == std::string_view::npos) return {rest, {}};
  return {rest.substr(0, nul), rest.substr(nul + 1)};
}


}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  fuzz::ByteReader in(data, size);
  const auto mode = in.Get<uint8_t>();
  const std::string rest = in.Rest();
  std::string path;
  std::string_view text;
  if (mode & 1) {
    const auto [encoder, after] = SplitAtNul(rest);
    const auto [bpe, tail] = SplitAtNul(after);
    fuzz::WriteScratchFile("gpt2/encoder.json", encoder);
    path = fuzz::WriteScratchFile("gpt2/vocab.bpe", bpe);
    path = path.substr(0, path.rfind('/'));
    text = tail;
  } else {
    const auto [json, tail] = SplitAtNul(rest);
    path = fuzz::WriteScratchFile("hf/tokenizer.json", json);
    text = tail;
  }
  const absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t = tokenizer::LoadTokenizer(path);
  if (!t.ok()) return 0;
  GRADSYNC_FUZZ_CHECK((*t)->vocab_size() > 0, "an empty vocabulary loaded");
  fuzz::ExerciseTokenizer(**t, text);
  fuzz::ExerciseTokenizer(**t, "Hello, world! caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac 123\n");
  return 0;
}
