// The CLI as a client of a server it does not trust: any answer a coordinator or metrics service
// could send, read the way `gradsync get`, `list`, `logs` and `report` read it (ParseRestAnswer),
// then shown the way they show it (DescribeJob, SummaryText, JobTable, LogLineText).
//
// Input: a kind byte (what the answer is read as: a job, a page of jobs, a page of log lines, a
// job's series), a status byte (200, or an error status), then the body.
// Checks beyond "no crash": an error's message, and every line the CLI would print, is fit for a
// terminal: no control character (but the line breaks of the text itself), no ill-formed UTF-8,
// so a server can neither send escape sequences to the user's terminal nor forge a line.
#include <string>
#include <string_view>

#include "absl/strings/str_split.h"
#include "describe.h"
#include "display.h"
#include "fuzz_support.h"
#include "gradsync/core/log_line.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/v1/job.pb.h"
#include "gradsync/v1/logs.pb.h"
#include "gradsync/v1/telemetry.pb.h"
#include "rest_answer.h"

namespace gradsync::fuzz {
namespace {

constexpr long kStatuses[] = {200, 400, 401, 404, 409, 429, 500, 502, 503};
constexpr char kUrl[] = "http://127.0.0.1:8080/v1/jobs";

// Every line of `text` prints as it is: TerminalSafe would change nothing in it.
void CheckPrintable(const std::string& text, const char* what) {
  for (absl::string_view piece : absl::StrSplit(text, '\n')) {
    const std::string line(piece);
    GRADSYNC_FUZZ_CHECK(TerminalSafe(line) == line, what);
  }
}

template <typename Message>
bool Read(long status, const std::string& body, Message* out) {
  const absl::Status s = cli::ParseRestAnswer(status, body, kUrl, out);
  if (s.ok()) return true;
  GRADSYNC_FUZZ_CHECK(status != 200 || s.code() == absl::StatusCode::kDataLoss, "a bad 200 answer that is not DATA_LOSS");
  const std::string message(s.message());
  GRADSYNC_FUZZ_CHECK(message.find('\n') == std::string::npos, "a line break in an error message");
  CheckPrintable(message, "an error message a terminal would not show as text");
  return false;
}

void FuzzAnswer(ByteReader& in) {
  const uint32_t kind = in.Below(4);
  const long status = kStatuses[in.Below(sizeof(kStatuses) / sizeof(kStatuses[0]))];
  const std::string body = in.Rest();
  switch (kind) {
    case 0: {
      v1::Job job;
      if (!Read(status, body, &job)) return;
      CheckPrintable(cli::DescribeJob(job), "gradsync get");
      CheckPrintable(cli::SummaryText(job), "a job's summary");
      return;
    }
    case 1: {
      v1::ListJobsResponse page;
      if (!Read(status, body, &page)) return;
      CheckPrintable(cli::JobTable(page), "gradsync list");
      CheckPrintable(cli::JobTable(page, /*wide=*/true), "gradsync list -o wide");
      return;
    }
    case 2: {
      v1::GetJobLogsResponse page;
      if (!Read(status, body, &page)) return;
      for (const v1::LogLine& line : page.lines()) {
        const std::string text = LogLineText(line);
        GRADSYNC_FUZZ_CHECK(!text.empty() && text.back() == '\n', "a log line that does not end its line");
        GRADSYNC_FUZZ_CHECK(text.find('\n') == text.size() - 1, "a log line that prints as more than one line");
        CheckPrintable(text, "gradsync logs");
      }
      return;
    }
    default: {
      v1::JobSeries series;
      (void)Read(status, body, &series);
      return;
    }
  }
}

}  // namespace
}  // namespace gradsync::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gradsync::fuzz::QuietLibraryLogs();
  gradsync::fuzz::ByteReader in(data, size);
  gradsync::fuzz::FuzzAnswer(in);
  return 0;
}
