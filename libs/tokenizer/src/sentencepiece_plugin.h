// The C interface of libgradsync_sentencepiece.so, the plugin that holds Debian's
// libsentencepiece. Debian builds that library with its own copy of protobuf-lite 3.14 and
// exports its symbols; linked into a process that also loads libprotobuf 3.21 (every gradsync
// binary), one copy's symbols bind to the other's code and the process aborts at start
// ("compiled against version 3.14.0 ... not compatible with 3.21.12"). The plugin is therefore
// never linked: sentencepiece_tokenizer.cc opens it with dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so
// that it and libsentencepiece bind to their own protobuf and nothing else sees it. Only C types
// cross this boundary.
#pragma once

#include <stddef.h>

// Bumped whenever a signature below changes; the loader refuses a plugin of another version.
inline constexpr int kGradsyncSentencePieceAbi = 1;

// The plugin's file name, looked for beside the binary (sentencepiece_tokenizer.cc).
inline constexpr char kGradsyncSentencePiecePlugin[] = "libgradsync_sentencepiece.so";

extern "C" {

struct GradsyncSentencePiece;
using GradsyncIdSink = void (*)(void* context, const int* ids, size_t count);
using GradsyncByteSink = void (*)(void* context, const char* bytes, size_t count);

int gradsync_sentencepiece_abi();
// A loaded model, or null when `path` is not one.
GradsyncSentencePiece* gradsync_sentencepiece_load(const char* path);
void gradsync_sentencepiece_free(GradsyncSentencePiece* model);
int gradsync_sentencepiece_size(const GradsyncSentencePiece* model);
// Each calls its sink once with the whole result and returns 0, or returns -1 on failure.
// decode's ids must lie in [0, size).
int gradsync_sentencepiece_encode(const GradsyncSentencePiece* model, const char* text, size_t length,
                                  GradsyncIdSink sink, void* context);
int gradsync_sentencepiece_decode(const GradsyncSentencePiece* model, const int* ids, size_t count,
                                  GradsyncByteSink sink, void* context);

}  // extern "C"
