#include "gradsync/core/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gradsync {
namespace {

LogLevel LevelFromEnv() {
  const char* env = std::getenv("GRADSYNC_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  std::string v = absl::AsciiStrToLower(env);
  if (v == "debug") return LogLevel::kDebug;
  if (v == "warning") return LogLevel::kWarning;
  if (v == "error") return LogLevel::kError;
  return LogLevel::kInfo;
}

std::atomic<int>& MinLevel() {
  static std::atomic<int> level{static_cast<int>(LevelFromEnv())};
  return level;
}

std::mutex& ComponentMutex() {
  static std::mutex mu;
  return mu;
}

std::string& Component() {
  static std::string component;
  return component;
}

char LevelChar(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return 'D';
    case LogLevel::kInfo: return 'I';
    case LogLevel::kWarning: return 'W';
    case LogLevel::kError: return 'E';
  }
  return '?';
}

}  // namespace

void SetMinLogLevel(LogLevel level) { MinLevel().store(static_cast<int>(level)); }
LogLevel MinLogLevel() { return static_cast<LogLevel>(MinLevel().load()); }

void SetLogComponent(std::string_view component) {
  std::lock_guard<std::mutex> lock(ComponentMutex());
  Component() = std::string(component);
}

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level) {
  const char* base = std::strrchr(file, '/');
  std::string component;
  {
    std::lock_guard<std::mutex> lock(ComponentMutex());
    component = Component();
  }
  stream_ << LevelChar(level) << ' ' << absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::LocalTimeZone()) << ' ';
  if (!component.empty()) stream_ << '[' << component << "] ";
  stream_ << (base ? base + 1 : file) << ':' << line << "] ";
}

LogMessage::~LogMessage() {
  stream_ << '\n';
  const std::string line = stream_.str();
  // One write per line keeps lines from concurrent threads and processes whole.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace gradsync
