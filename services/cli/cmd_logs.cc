// gradsync logs JOB [--rank R] [--follow]: a job's own log lines, through the coordinator
// (JobLogService), or from a local cluster's files once the cluster is gone.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "gradsync/cluster/job_log_files.h"
#include "gradsync/core/args.h"
#include "gradsync/core/env.h"
#include "gradsync/core/log_line.h"
#include "gradsync/core/shutdown.h"
#include "job_client.h"

namespace gradsync::cli {
namespace {

constexpr absl::Duration kFollowInterval = absl::Seconds(1);

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", DescribeError(s).c_str());
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// Prints every line after `*after`, page by page; moves `*after` past them and returns the job's
// dropped count.
absl::StatusOr<int64_t> Drain(JobClient& client, v1::GetJobLogsRequest request, int64_t* after) {
  for (;;) {
    request.set_after_seq(*after);
    absl::StatusOr<v1::GetJobLogsResponse> page = client.GetLogs(request);
    if (!page.ok()) return page.status();
    // Only lines past `*after`, in order, each once: a server that sends old lines again, or
    // pages that do not advance, cannot make this loop or print a line twice.
    int64_t newest = *after;
    for (const v1::LogLine& line : page->lines()) {
      if (line.seq() <= newest) continue;
      newest = line.seq();
      std::fputs(LogLineText(line).c_str(), stdout);
    }
    std::fflush(stdout);
    // A short page scanned to the newest line; a full one stops at its last.
    const bool full = page->lines_size() >= request.limit();
    if (full && newest == *after) {
      return absl::DataLossError(absl::StrCat("the coordinator's log pages do not advance past line ", *after));
    }
    *after = full ? newest : std::max(newest, page->last_seq());
    if (!full) return std::max<int64_t>(0, page->dropped());
  }
}

// Through the coordinator: everything so far, then with `follow` the new lines until the job ends
// (or Ctrl-C: 130).
int FromCoordinator(JobClient& client, const std::string& job, std::optional<int> rank, bool follow) {
  v1::GetJobLogsRequest request;
  request.set_name(job);
  if (rank.has_value()) request.set_rank(*rank);
  request.set_limit(5000);
  int64_t after = 0;
  absl::StatusOr<int64_t> dropped = Drain(client, request, &after);
  if (!dropped.ok()) return Fail(dropped.status());
  InstallShutdownHandlers();
  while (follow) {
    // The state first: lines logged before the job ended are in by the time it shows as ended.
    absl::StatusOr<v1::Job> state = client.Get(job);
    if (!state.ok()) return Fail(state.status());
    dropped = Drain(client, request, &after);
    if (!dropped.ok()) return Fail(dropped.status());
    if (IsTerminal(state->state())) break;
    if (WaitForShutdown(kFollowInterval)) return 130;
  }
  if (*dropped > 0) {
    std::fprintf(stderr, "(%lld lines not kept: over a worker's rate, or the oldest beyond the coordinator's bound)\n",
                 static_cast<long long>(*dropped));
  }
  return 0;
}

// The state directory the options name explicitly (--state-dir, GRADSYNC_STATE_DIR); "" for none.
std::string NamedStateDir(const Args& args) { return args.Get("state-dir", EnvOr("GRADSYNC_STATE_DIR", "")); }

}  // namespace

int LogsCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("logs", argv);
  if (!args.ok()) return Fail(args.status());
  if (args->positional.size() != 1) {
    std::fprintf(stderr, "%s", UsageLine(*FindCommand("logs")).c_str());
    return 2;
  }
  std::optional<int> rank;
  if (args->Has("rank")) {
    absl::StatusOr<int> r = args->GetInt("rank", 0, 0, 1 << 20);
    if (!r.ok()) return Fail(r.status());
    rank = *r;
  }
  const std::string job = args->positional[0];
  absl::StatusOr<std::unique_ptr<JobClient>> client = ConnectJobClient(*args);
  if (client.ok()) return FromCoordinator(**client, job, rank, args->Has("follow"));
  // A local cluster that is gone: its workers' files.
  const std::string state_dir = NamedStateDir(*args);
  if (state_dir.empty() || client.status().code() != absl::StatusCode::kNotFound) return Fail(client.status());
  absl::StatusOr<std::string> lines =
      cluster::ReadJobLogFiles(cluster::JobLogDir(state_dir), std::string(absl::StripPrefix(job, "jobs/")), rank);
  if (!lines.ok())
    return Fail(absl::NotFoundError(absl::StrCat(client.status().message(), "; ", lines.status().message())));
  std::fputs(lines->c_str(), stdout);
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> LogsRows() {
  std::vector<Command> t;
  t.push_back({.name = "logs",
               .synopsis = "JOB [--rank R] [--follow]",
               .summary = "a job's own log lines, from every rank (or rank R), in time order",
               .example = "gradsync logs jobs/mlp-1a2b3 --rank 0 --follow",
               .details = "Lines read \"I 2026-11-28T15:04:05.123Z r1 g2 source] message\": level, UTC time, rank,\n"
                          "generation. They come through the coordinator, which keeps the newest lines of each\n"
                          "job in memory (a worker ships at most 50 a second); with -f/--follow new lines follow\n"
                          "until the job ends. Once a local cluster is gone, --state-dir DIR reads its workers'\n"
                          "files (DIR/logs/jobs/<id>/rank-<r>.log) instead.\n",
               .options = Plus({{"rank", "R"}, {"follow", "", 'f'}}, ConnectionOptions()),
               .connects = true,
               .run = LogsCommand});
  return t;
}

}  // namespace gradsync::cli
