#include "gradsync/core/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gradsync/core/json_string.h"

namespace gradsync {
namespace {

constexpr char kFormatEnv[] = "GRADSYNC_LOG_FORMAT";

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

// GRADSYNC_LOG_FORMAT as found at the first message; `unknown` keeps a value that is neither
// format, for the one warning about it.
struct EnvFormat {
  LogFormat format = LogFormat::kText;
  std::string unknown;
};

const EnvFormat& FormatFromEnv() {
  static const EnvFormat env = [] {
    EnvFormat f;
    const char* value = std::getenv(kFormatEnv);
    if (value == nullptr || *value == '\0') return f;
    const std::string v = absl::AsciiStrToLower(value);
    if (v == "json") {
      f.format = LogFormat::kJson;
    } else if (v != "text") {
      f.unknown = value;
    }
    return f;
  }();
  return env;
}

std::atomic<int>& Format() {
  static std::atomic<int> format{static_cast<int>(FormatFromEnv().format)};
  return format;
}

// What every line carries beside the message.
struct Context {
  std::string component;
  std::string job;
  int rank = 0;
  bool has_job = false;
};

std::mutex& ContextMutex() {
  static std::mutex mu;
  return mu;
}

Context& SharedContext() {
  static Context context;
  return context;
}

Context CurrentContext() {
  std::lock_guard<std::mutex> lock(ContextMutex());
  return SharedContext();
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

// RFC 3339 in UTC with milliseconds: 2026-11-25T01:02:03.456Z.
std::string Rfc3339(absl::Time t) { return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone()); }

// The tap, shared so that a call in flight keeps the one it started with.
std::mutex& TapMutex() {
  static std::mutex mu;
  return mu;
}

std::shared_ptr<const LogTap>& SharedTap() {
  static std::shared_ptr<const LogTap> tap;
  return tap;
}

std::shared_ptr<const LogTap> CurrentTap() {
  std::lock_guard<std::mutex> lock(TapMutex());
  return SharedTap();
}

// Whether this thread is inside the tap: what the tap logs is written, not tapped again.
thread_local bool in_tap = false;

std::string TextLine(absl::Time now, LogLevel level, const Context& context, std::string_view source,
                     std::string_view message) {
  std::string line(1, LevelChar(level));
  absl::StrAppend(&line, " ", Rfc3339(now), " ");
  if (!context.component.empty()) absl::StrAppend(&line, "[", context.component, "] ");
  line.append(source).append("] ").append(message).append("\n");
  return line;
}

std::string JsonLine(absl::Time now, LogLevel level, const Context& context, std::string_view source,
                     std::string_view message) {
  std::string line = absl::StrCat("{\"time\":\"", Rfc3339(now), "\",\"level\":\"", LogLevelName(level), "\"");
  if (!context.component.empty()) {
    line.append(",\"component\":");
    AppendJsonString(&line, context.component);
  }
  line.append(",\"source\":");
  AppendJsonString(&line, source);
  line.append(",\"message\":");
  AppendJsonString(&line, message);
  if (context.has_job) {
    line.append(",\"job\":");
    AppendJsonString(&line, context.job);
    absl::StrAppend(&line, ",\"rank\":", context.rank);
  }
  line.append("}\n");
  return line;
}

// Once per process, before the first line: the format asked for was not understood.
void WarnOfUnknownFormatOnce() {
  static std::atomic<bool> warned{false};
  const std::string& unknown = FormatFromEnv().unknown;
  if (unknown.empty() || warned.exchange(true)) return;
  LogMessage(LogLevel::kWarning, __FILE__, __LINE__).stream()
      << kFormatEnv << "=\"" << absl::CHexEscape(unknown.substr(0, 64)) << "\" is neither text nor json: writing text";
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "unknown";
}

void SetLogTap(LogTap tap) {
  std::shared_ptr<const LogTap> next = tap ? std::make_shared<const LogTap>(std::move(tap)) : nullptr;
  std::lock_guard<std::mutex> lock(TapMutex());
  SharedTap() = std::move(next);
}

void SetMinLogLevel(LogLevel level) { MinLevel().store(static_cast<int>(level)); }
LogLevel MinLogLevel() { return static_cast<LogLevel>(MinLevel().load()); }

void SetLogComponent(std::string_view component) {
  std::lock_guard<std::mutex> lock(ContextMutex());
  SharedContext().component = std::string(component);
}

void SetLogFormat(LogFormat format) { Format().store(static_cast<int>(format)); }

void SetLogContext(std::string_view job, int rank) {
  std::lock_guard<std::mutex> lock(ContextMutex());
  SharedContext().job = std::string(job);
  SharedContext().rank = rank;
  SharedContext().has_job = true;
}

void ClearLogContext() {
  std::lock_guard<std::mutex> lock(ContextMutex());
  SharedContext().job.clear();
  SharedContext().has_job = false;
}

LogMessage::LogMessage(LogLevel level, const char* file, int line) : level_(level), file_(file), line_(line) {}

LogMessage::~LogMessage() {
  WarnOfUnknownFormatOnce();
  const char* base = std::strrchr(file_, '/');
  const std::string source = absl::StrCat(base ? base + 1 : file_, ":", line_);
  const Context context = CurrentContext();
  const std::string message = stream_.str();
  const absl::Time now = absl::Now();
  const std::string line = static_cast<LogFormat>(Format().load()) == LogFormat::kJson
                               ? JsonLine(now, level_, context, source, message)
                               : TextLine(now, level_, context, source, message);
  // One write per line keeps lines from concurrent threads and processes whole.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  if (!context.has_job || in_tap) return;
  if (const std::shared_ptr<const LogTap> tap = CurrentTap()) {
    in_tap = true;
    (*tap)(LogRecord{now, level_, source, message, context.job, context.rank});
    in_tap = false;
  }
}

}  // namespace gradsync
