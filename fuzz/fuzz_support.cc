#include "fuzz_support.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "google/protobuf/stubs/logging.h"

namespace gradsync::fuzz {
namespace {

struct Scratch {
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gradsync-fuzz-" + std::to_string(::getpid());
    std::filesystem::create_directories(path);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string path;
};

}  // namespace

void QuietLibraryLogs() {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
    return true;
  }();
  (void)quiet;
}

const std::string& ScratchDir() {
  static Scratch scratch;
  return scratch.path;
}

std::string WriteScratchFile(const std::string& name, std::string_view bytes) {
  const std::string path = ScratchDir() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  GRADSYNC_FUZZ_CHECK(out.good(), path);
  return path;
}

}  // namespace gradsync::fuzz
