// SentencePiece models through the libgradsync_sentencepiece.so plugin (sentencepiece_plugin.h).
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "loaders.h"
#include "sentencepiece_plugin.h"
#include "tokenizer_file.h"

namespace gradsync::tokenizer {
namespace {

// The plugin's entry points, resolved once per process.
struct Plugin {
  decltype(&gradsync_sentencepiece_load) load = nullptr;
  decltype(&gradsync_sentencepiece_free) free = nullptr;
  decltype(&gradsync_sentencepiece_size) size = nullptr;
  decltype(&gradsync_sentencepiece_encode) encode = nullptr;
  decltype(&gradsync_sentencepiece_decode) decode = nullptr;
};

// Where a binary's plugin lies: beside it (build/bin, an installed bin/), or in the bin/ or
// lib/gradsync/ next to its directory (the test binaries in build/tests).
std::vector<std::filesystem::path> PluginCandidates() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const std::filesystem::path dir = exe.parent_path();
  return {dir / kGradsyncSentencePiecePlugin, dir.parent_path() / "bin" / kGradsyncSentencePiecePlugin,
          dir.parent_path() / "lib" / "gradsync" / kGradsyncSentencePiecePlugin};
}

absl::StatusOr<Plugin> OpenPlugin() {
  void* handle = nullptr;
  for (const std::filesystem::path& candidate : PluginCandidates()) {
    if (::access(candidate.c_str(), R_OK) != 0) continue;
    // RTLD_DEEPBIND: the plugin and libsentencepiece bind to their own protobuf first.
    handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle != nullptr) break;
  }
  if (handle == nullptr) {
    return absl::UnimplementedError(absl::StrCat("SentencePiece models need ", kGradsyncSentencePiecePlugin,
                                                 " beside the gradsync binary (built where libsentencepiece-dev is "
                                                 "installed), and libsentencepiece0"));
  }
  auto abi = reinterpret_cast<decltype(&gradsync_sentencepiece_abi)>(::dlsym(handle, "gradsync_sentencepiece_abi"));
  Plugin p;
  p.load = reinterpret_cast<decltype(p.load)>(::dlsym(handle, "gradsync_sentencepiece_load"));
  p.free = reinterpret_cast<decltype(p.free)>(::dlsym(handle, "gradsync_sentencepiece_free"));
  p.size = reinterpret_cast<decltype(p.size)>(::dlsym(handle, "gradsync_sentencepiece_size"));
  p.encode = reinterpret_cast<decltype(p.encode)>(::dlsym(handle, "gradsync_sentencepiece_encode"));
  p.decode = reinterpret_cast<decltype(p.decode)>(::dlsym(handle, "gradsync_sentencepiece_decode"));
  if (abi == nullptr || abi() != kGradsyncSentencePieceAbi || !p.load || !p.free || !p.size || !p.encode || !p.decode) {
    return absl::UnimplementedError(
        absl::StrCat(kGradsyncSentencePiecePlugin, " is not the plugin this gradsync was built with"));
  }
  return p;
}

const absl::StatusOr<Plugin>& ThePlugin() {
  static const absl::StatusOr<Plugin>* plugin = new absl::StatusOr<Plugin>(OpenPlugin());
  return *plugin;
}

class SentencePieceTokenizer final : public Tokenizer {
 public:
  SentencePieceTokenizer(const Plugin& plugin, GradsyncSentencePiece* model)
      : plugin_(plugin), model_(model), size_(plugin.size(model)) {}
  ~SentencePieceTokenizer() override { plugin_.free(model_); }

  TokenizerKind kind() const override { return TokenizerKind::kSentencePiece; }
  int vocab_size() const override { return size_; }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const override {
    std::vector<int32_t> ids;
    const auto sink = [](void* context, const int* got, size_t count) {
      static_cast<std::vector<int32_t>*>(context)->assign(got, got + count);
    };
    if (plugin_.encode(model_, text.data(), text.size(), sink, &ids) != 0) {
      return absl::InternalError("SentencePiece failed to encode the text");
    }
    return ids;
  }

  absl::StatusOr<std::string> Decode(std::span<const int32_t> ids) const override {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= size_) {
        return absl::InvalidArgumentError(
            absl::StrCat("token ", i, " (id ", ids[i], ") is not in the vocabulary of ", size_, " ids"));
      }
    }
    std::string text;
    const auto sink = [](void* context, const char* bytes, size_t count) {
      static_cast<std::string*>(context)->assign(bytes, count);
    };
    if (plugin_.decode(model_, ids.data(), ids.size(), sink, &text) != 0) {
      return absl::InternalError("SentencePiece failed to decode the ids");
    }
    return text;
  }

 private:
  const Plugin& plugin_;
  GradsyncSentencePiece* model_;
  int size_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(const std::string& path) {
  // Read here first: the same bounds and errors as the other kinds, before the library sees it.
  if (absl::StatusOr<std::string> bytes = ReadTokenizerFile(path); !bytes.ok()) return bytes.status();
  const absl::StatusOr<Plugin>& plugin = ThePlugin();
  if (!plugin.ok()) return plugin.status();
  GradsyncSentencePiece* model = plugin->load(path.c_str());
  if (model == nullptr) return absl::InvalidArgumentError(absl::StrCat(path, ": is not a SentencePiece model"));
  return std::make_unique<SentencePieceTokenizer>(*plugin, model);
}

}  // namespace gradsync::tokenizer
