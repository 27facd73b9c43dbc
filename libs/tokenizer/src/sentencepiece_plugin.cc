// libgradsync_sentencepiece.so: Debian's libsentencepiece behind a C interface (see
// sentencepiece_plugin.h for why it is a plugin). It includes no Abseil header:
// sentencepiece_processor.h declares its own absl::string_view, which clashes with Abseil's.
#include "sentencepiece_plugin.h"

#include <sentencepiece_processor.h>

#include <string>
#include <vector>

struct GradsyncSentencePiece {
  sentencepiece::SentencePieceProcessor processor;
};

extern "C" {

__attribute__((visibility("default"))) int gradsync_sentencepiece_abi() { return kGradsyncSentencePieceAbi; }

__attribute__((visibility("default"))) GradsyncSentencePiece* gradsync_sentencepiece_load(const char* path) {
  auto* model = new GradsyncSentencePiece();
  if (!model->processor.Load(path).ok()) {
    delete model;
    return nullptr;
  }
  return model;
}

__attribute__((visibility("default"))) void gradsync_sentencepiece_free(GradsyncSentencePiece* model) { delete model; }

__attribute__((visibility("default"))) int gradsync_sentencepiece_size(const GradsyncSentencePiece* model) {
  return model->processor.GetPieceSize();
}

__attribute__((visibility("default"))) int gradsync_sentencepiece_encode(const GradsyncSentencePiece* model,
                                                                         const char* text, size_t length,
                                                                         GradsyncIdSink sink, void* context) {
  std::vector<int> ids;
  if (!model->processor.Encode(std::string_view(text, length), &ids).ok()) return -1;
  sink(context, ids.data(), ids.size());
  return 0;
}

__attribute__((visibility("default"))) int gradsync_sentencepiece_decode(const GradsyncSentencePiece* model,
                                                                         const int* ids, size_t count,
                                                                         GradsyncByteSink sink, void* context) {
  std::string text;
  if (!model->processor.Decode(std::vector<int>(ids, ids + count), &text).ok()) return -1;
  sink(context, text.data(), text.size());
  return 0;
}

}  // extern "C"
