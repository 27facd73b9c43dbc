// Minimal leveled logging to stderr: one line per message with time, level and source.
//
//   GS_LOG(INFO) << "worker " << id << " registered";
//
// Text lines read "I 2026-11-25T01:02:03.456Z [component] file.cc:12] message" (UTC, RFC 3339).
// GRADSYNC_LOG_FORMAT=json makes each line one JSON object instead, for log collectors:
//   {"time":"2026-11-25T01:02:03.456Z","level":"info","component":"worker r1",
//    "source":"agent.cc:37","message":"...","job":"j-1","rank":1}
// ("component" once set; "job" and "rank" while a log context is set). Any other value of
// GRADSYNC_LOG_FORMAT keeps text, with one warning.
//
// Thread-safe: each message is formatted in full and written with one call.
#pragma once

#include <functional>
#include <sstream>
#include <string_view>

#include "absl/time/time.h"

namespace gradsync {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Defaults to kInfo, or GRADSYNC_LOG_LEVEL
// ("debug", "info", "warning", "error") when set.
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

// Prefix added to every line, e.g. "coordinator" or "worker r1".
void SetLogComponent(std::string_view component);

enum class LogFormat { kText, kJson };
// Defaults to GRADSYNC_LOG_FORMAT ("text" or "json"), read at the first message.
void SetLogFormat(LogFormat format);

// The job and rank this process works for, added to every JSON line until ClearLogContext: a
// worker sets them while it runs a generation.
void SetLogContext(std::string_view job, int rank);
void ClearLogContext();

// A message logged while a log context is set, as a tap sees it (valid during the call only).
struct LogRecord {
  absl::Time time;
  LogLevel level;
  std::string_view source;  // "train_loop.cc:120"
  std::string_view message;
  std::string_view job;
  int rank;
};

// Every message logged while a log context is set is also handed to `tap`, on the thread that
// logs it, after its line is written; null removes the tap. A message the tap logs itself is not
// handed to it again. The tap must be quick (a worker queues the record for shipping); it may run
// on several threads at once and once more after SetLogTap replaced it.
using LogTap = std::function<void(const LogRecord&)>;
void SetLogTap(LogTap tap);

// "debug", "info", "warning", "error".
const char* LogLevelName(LogLevel level);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream stream_;  // the message alone
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
