// SentencePiece models as `gradsync data prepare` and `generate` load them from files someone else
// wrote, through the plugin (libgradsync_sentencepiece.so) and the child process that tries each
// model before this process touches it (libs/tokenizer/src/sentencepiece_tokenizer.cc).
//
// Input: the .model file. Checks beyond "no crash, no hang": a model that loads encodes a fixed
// text (of the kind the child's probe tries) into ids within its vocabulary, and decodes them
// again; one the library cannot survive is refused with INVALID_ARGUMENT naming the file.
//
// This target is built apart from the others, with UndefinedBehaviorSanitizer but not
// AddressSanitizer (scripts/fuzz.sh): the plugin is opened with RTLD_DEEPBIND, which
// AddressSanitizer's runtime refuses. Debian's libsentencepiece is not instrumented, so coverage
// guides the fuzzer through gradsync's side only; the library's crashes are caught in the child.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "gradsync/tokenizer/tokenizer.h"
#include "tokenizer_exercise.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gradsync;
  fuzz::QuietLibraryLogs();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = fuzz::WriteScratchFile("model.model", bytes);
  absl::StatusOr<std::unique_ptr<tokenizer::Tokenizer>> t = tokenizer::LoadTokenizer(path);
  if (absl::IsUnimplemented(t.status())) {
    std::fprintf(stderr, "fuzz_sentencepiece: %s\n", std::string(t.status().message()).c_str());
    std::abort();  // no plugin: nothing here would be fuzzed
  }
  if (!t.ok()) {
    GRADSYNC_FUZZ_CHECK(t.status().code() == absl::StatusCode::kInvalidArgument, t.status().ToString());
    GRADSYNC_FUZZ_CHECK(t.status().message().find(path) != std::string::npos, "a refusal that does not name the file");
    return 0;
  }
  GRADSYNC_FUZZ_CHECK((*t)->kind() == tokenizer::TokenizerKind::kSentencePiece, "a .model read as another kind");
  GRADSYNC_FUZZ_CHECK((*t)->vocab_size() > 0, "a model without a vocabulary");
  fuzz::ExerciseTokenizer(**t, "Hello, World! caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80 \t end.");
  return 0;
}
