// A job's log line (gradsync.v1.LogLine) as one line of text, the form of the workers' job log
// files (job_log_shipper.h) and of `gradsync logs`:
//
//   I 2026-11-28T15:04:05.123Z r1 g2 train_loop.cc:120] step 100 loss 2.31
//
// the level's initial, the time in UTC (RFC 3339, milliseconds), the rank and generation, the
// source, the message.
#pragma once

#include <string>

#include "gradsync/v1/logs.pb.h"

namespace gradsync {

// The line, ending in "\n".
std::string LogLineText(const v1::LogLine& line);

}  // namespace gradsync
