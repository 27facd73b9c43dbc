// Minimal leveled logging to stderr: one line per message with time, level and source.
//
//   GS_LOG(INFO) << "worker " << id << " registered";
//
// Thread-safe: each message is formatted in full and written with one call.
#pragma once

#include <sstream>
#include <string_view>

namespace gradsync {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Defaults to kInfo, or GRADSYNC_LOG_LEVEL
// ("debug", "info", "warning", "error") when set.
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

// Prefix added to every line, e.g. "coordinator" or "worker r1".
void SetLogComponent(std::string_view component);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace gradsync

#define GS_LOG_LEVEL_DEBUG ::gradsync::LogLevel::kDebug
#define GS_LOG_LEVEL_INFO ::gradsync::LogLevel::kInfo
#define GS_LOG_LEVEL_WARNING ::gradsync::LogLevel::kWarning
#define GS_LOG_LEVEL_ERROR ::gradsync::LogLevel::kError

#define GS_LOG(level)                                     \
  if (GS_LOG_LEVEL_##level < ::gradsync::MinLogLevel()) { \
  } else                                                  \
    ::gradsync::LogMessage(GS_LOG_LEVEL_##level, __FILE__, __LINE__).stream()
