// gradsync report JOB -o FILE: a job's series as a picture (.svg) or as data (.csv, .jsonl), from
// the metrics service or, when it does not have the job, from the series file beside the job's
// weights.
#include <cstdio>

#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "gradsync/core/args.h"
#include "job_names.h"
#include "series_files.h"
#include "series_lookup.h"

namespace gradsync::cli {
namespace {

// `given` as a job name: a job's spec name stands for its newest job while a coordinator answers
// (job_names.h); otherwise, once the cluster is gone, `given` itself names the job's files.
std::string NamedJob(const Args& args, const std::string& given) {
  absl::StatusOr<std::unique_ptr<JobClient>> client = ConnectJobClient(args);
  if (!client.ok()) return given;
  absl::StatusOr<std::string> resolved = ResolveJobName(**client, given);
  return resolved.ok() ? *resolved : given;
}

}  // namespace

int ReportCommand(const std::vector<std::string>& argv) {
  constexpr char kUsage[] =
      "usage: gradsync report JOB -o FILE.svg|FILE.csv|FILE.jsonl [--metrics-api HOST:PORT --metrics-token-file "
      "FILE | --state-dir DIR] [--artifact-root DIR]\n";
  auto args = ParseCommandArgs("report", argv);
  if (!args.ok() || args->positional.size() != 1 || !args->Has("output")) {
    if (!args.ok()) std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string path = args->Get("output");
  absl::StatusOr<SeriesFormat> format = SeriesFormatOf(path);
  absl::StatusOr<std::string> id = JobIdForFiles(NamedJob(*args, args->positional[0]));
  for (const absl::Status& s : {format.status(), id.status()}) {
    if (s.ok()) continue;
    std::fprintf(stderr, "%s\n%s", std::string(s.message()).c_str(), kUsage);
    return 2;
  }
  absl::StatusOr<FoundSeries> found = FindSeries(*args, *id);
  if (!found.ok()) {
    std::fprintf(stderr, "%s\n", DescribeError(found.status()).c_str());
    return 1;
  }
  if (absl::Status s = WriteFileAtomically(path, FormatSeries(found->series, *format)); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  int64_t steps = 0;
  for (const v1::ReducedStep& p : found->series.steps()) steps += p.merged_steps() > 1 ? p.merged_steps() : 1;
  std::printf("%s: %d points (%lld steps) of job %s, from %s\n", path.c_str(), found->series.steps_size(),
              static_cast<long long>(steps), id->c_str(), found->source.c_str());
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> ReportRows() {
  std::vector<Command> t;
  t.push_back({.name = "report",
               .synopsis = "JOB -o FILE.svg|FILE.csv|FILE.jsonl [--metrics-api HOST:PORT] [--metrics-token-file FILE]\n"
                           "    [--state-dir DIR] [--artifact-root DIR]",
               .summary = "a job's loss and throughput curves (.svg) or its series as data (.csv, .jsonl)",
               .example = "gradsync report jobs/mlp-1a2b3 -o curves.svg",
               .details =
                   "The format is the file's extension. The series comes from the metrics API: --metrics-api\n"
                   "(env GRADSYNC_METRICS_API) with its token in --metrics-token-file (env\n"
                   "GRADSYNC_METRICS_TOKEN_FILE), --state-dir's, or the current cluster's; when none answers or\n"
                   "it does not know the job, from the series file kept beside the job's weights (under\n"
                   "--state-dir DIR of a run, or --artifact-root DIR), so the curves outlive the cluster.\n",
               .options = Plus({Output("FILE"), {"artifact-root", "DIR"}}, MetricsApiOptions()),
               .run = ReportCommand});
  return t;
}

}  // namespace gradsync::cli
