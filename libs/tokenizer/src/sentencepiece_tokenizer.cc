// SentencePiece models through the libgradsync_sentencepiece.so plugin (sentencepiece_plugin.h).
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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

// Text that walks SentencePiece's normaliser through ASCII, Latin, CJK and emoji, spaces and
// controls: what a malformed model's tables break on.
constexpr char kProbeText[] = "Hello, World! 0123 \t tabs\nand lines; caf\xc3\xa9 \xc3\xbc\xc3\x9f "
                              "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x9a\x80 \xef\xbc\xa1 end.";
constexpr absl::Duration kProbeTimeout = absl::Seconds(30);

// Loads the model and encodes the probe in a child process before this process touches it: the
// library trusts the model's tables (a precompiled character map whose trie points past its end
// makes it read out of bounds and crash), and a bad file must fail this load, not the process.
// INVALID_ARGUMENT naming the file when the child dies of a signal, hangs, or cannot load it.
absl::Status ProbeInChild(const Plugin& plugin, const std::string& path) {
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // A crash in the library ends the child by its signal, whatever handlers this process had (a
    // crash reporter's, a sanitizer's or a fuzzer's would report it as this process's own).
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(sig, SIG_DFL);
    GradsyncSentencePiece* model = plugin.load(path.c_str());
    if (model == nullptr) ::_exit(3);
    const int encoded = plugin.encode(model, kProbeText, sizeof(kProbeText) - 1, [](void*, const int*, size_t) {}, nullptr);
    ::_exit(encoded == 0 ? 0 : 4);
  }
  int status = 0;
  const absl::Time deadline = absl::Now() + kProbeTimeout;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return absl::InvalidArgumentError(absl::StrCat(path, ": the SentencePiece library did not finish reading this model "
                                                   "within ", absl::FormatDuration(kProbeTimeout), ": it is malformed"));
  }
  if (WIFSIGNALED(status)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the SentencePiece library crashed on this model (signal ",
                                                   WTERMSIG(status), "): it is malformed"));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is not a SentencePiece model"));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the SentencePiece library cannot encode text with this model"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(const std::string& path) {
  // Read here first: the same bounds and errors as the other kinds, before the library sees it.
  if (absl::StatusOr<std::string> bytes = ReadTokenizerFile(path); !bytes.ok()) return bytes.status();
  const absl::StatusOr<Plugin>& plugin = ThePlugin();
  if (!plugin.ok()) return plugin.status();
  if (absl::Status probed = ProbeInChild(*plugin, path); !probed.ok()) return probed;
  GradsyncSentencePiece* model = plugin->load(path.c_str());
  if (model == nullptr) return absl::InvalidArgumentError(absl::StrCat(path, ": is not a SentencePiece model"));
  return std::make_unique<SentencePieceTokenizer>(*plugin, model);
}

}  // namespace gradsync::tokenizer
