// gradsync submit | get | list | cancel | watch: clients of a running coordinator.
#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include "absl/time/clock.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "describe.h"
#include "display.h"
#include "gradsync/core/args.h"
#include "gradsync/core/shutdown.h"
#include "gradsync/core/terminal_text.h"
#include "job_client.h"
#include "job_watch.h"
#include "output_format.h"
#include "spec_input.h"

namespace gradsync::cli {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", DescribeError(s).c_str());
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// What a job command was given: its arguments and the -o format.
struct Parsed {
  Args args;
  OutputFormat format;
};

// Parses, reads -o, then checks that exactly `n` positional arguments came (the usage from the
// command table otherwise).
absl::StatusOr<Parsed> Parse(const std::string& cmd, const std::vector<std::string>& argv, size_t n) {
  auto args = ParseCommandArgs(cmd, argv);
  if (!args.ok()) return args.status();
  auto format = OutputFormatOf(cmd, *args);
  if (!format.ok()) return format.status();
  if (args->positional.size() != n) {
    const Command* c = FindCommand(cmd);
    const std::string usage = c != nullptr ? UsageLine(*c) : absl::StrCat("gradsync ", cmd, ": bad usage");
    return absl::InvalidArgumentError(absl::StripTrailingAsciiWhitespace(usage));
  }
  return Parsed{*std::move(args), *format};
}

// A job's summary (SummaryJson) or the job itself (JobJson, whose `schema` is v1::Job's) in
// `format`: table prints `text`, name the job's name.
std::string Show(const v1::Job& job, OutputFormat format, const std::string& json, const std::string& text,
                 const google::protobuf::Descriptor* schema = nullptr) {
  switch (format) {
    case OutputFormat::kName: return job.name() + "\n";
    case OutputFormat::kJson:
    case OutputFormat::kYaml: return InFormat(json, format, schema);
    default: return text;
  }
}

// Watches to the end with progress (on stderr unless `format` is the table); exit code 0 only for
// SUCCEEDED. With a metrics API address the final loss curve has every step.
int WatchToEnd(JobClient& client, const std::string& name, OutputFormat format, const MetricsApi& metrics_api) {
  InstallShutdownHandlers();
  std::atomic<bool> stop{false};
  ProgressView view(format == OutputFormat::kTable ? stdout : stderr);
  std::thread sig([&] {
    for (int tick = 1; !stop && !WaitForShutdown(absl::Milliseconds(100)); ++tick) {
      if (tick % 10 == 0) view.Tick();
    }
    stop = true;
  });
  const FollowedJob followed = FollowJob(client, name, view, metrics_api, &stop);
  view.Finish();
  sig.join();
  const absl::StatusOr<v1::Job>& job = followed.job;
  if (!job.ok()) return job.status().code() == absl::StatusCode::kCancelled ? 130 : Fail(job.status());
  std::printf("%s", Show(*job, format, SummaryJson(*job), SummaryText(*job)).c_str());
  return job->state() == v1::SUCCEEDED ? 0 : 1;
}

// `status`, a local cluster's refusal of data outside its data roots, with the command that starts
// one that reads it appended; otherwise `status` unchanged.
absl::Status WithDataRootAdvice(const absl::Status& status, const v1::JobSpec& spec,
                                const cluster::LocalClusterFile& local) {
  if (status.code() != absl::StatusCode::kInvalidArgument || !absl::StrContains(status.message(), "outside the data root")) {
    return status;
  }
  const std::vector<std::string> missing = DataDirsOutside(spec, local.data_roots);
  if (missing.empty()) return status;
  std::string up = absl::StrCat("gradsync local up --workers ", local.workers, " --state-dir ", local.state_dir);
  for (const std::string& root : local.data_roots) absl::StrAppend(&up, " --data-root ", root);
  for (const std::string& dir : missing) absl::StrAppend(&up, " --data-root ", dir);
  return absl::InvalidArgumentError(
      absl::StrCat(status.message(), "\nthis local cluster reads job data only inside its --data-root directories (",
                   absl::StrJoin(local.data_roots, ", "), "); start one that also reads ", absl::StrJoin(missing, ", "),
                   ":\n  gradsync local down && ", up));
}

// Waits until no worker holds a rank of job `id` (or `wait` has passed: DEADLINE_EXCEEDED naming
// the workers still busy with it).
absl::Status AwaitWorkersFreed(JobClient& client, const std::string& id, absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  bool said = false;
  for (;;) {
    absl::StatusOr<v1::ListWorkersResponse> workers = client.ListWorkers();
    if (!workers.ok()) return workers.status();
    std::vector<std::string> busy;
    for (const v1::Worker& w : workers->workers()) {
      if (w.state() == v1::WORKER_BUSY && w.job_id() == id) busy.push_back(TerminalSafe(w.name()));
    }
    if (busy.empty()) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("jobs/", id, " ended, but its ranks still run on ", absl::StrJoin(busy, ", ")));
    }
    if (!said) {
      std::fprintf(stderr, "jobs/%s: waiting for its ranks to stop on %zu worker%s\n", TerminalSafe(id).c_str(),
                   busy.size(), busy.size() == 1 ? "" : "s");
      said = true;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace

int SubmitCommand(const std::vector<std::string>& argv) {
  const std::optional<std::vector<std::string>> command = CommandAfterDashes(argv);
  auto parsed = Parse("submit", argv, command.has_value() ? command->size() : 1);
  if (!parsed.ok()) return Fail(parsed.status());
  const Args& args = parsed->args;
  auto workers = args.GetInt("workers", 0, 1, 4096);
  if (!workers.ok()) return Fail(workers.status());
  auto spec = command.has_value() ? ScriptSpecFromCommandLine(*command, SpecOverrides(args), *workers)
                                  : LoadSpecFromCommandLine(args.positional[0], SpecOverrides(args), *workers);
  if (!spec.ok()) return Fail(spec.status());
  std::fputs(CheckpointSizeNote(*spec).c_str(), stderr);
  auto connected = ConnectJobClient(args);
  if (!connected.ok()) return Fail(connected.status());
  // A local cluster reads the files where this process sees them: relative paths start here.
  auto local = TargetLocalCluster(args);
  if (!local.ok()) return Fail(local.status());
  if (local->has_value()) MakeDataPathsAbsolute(&*spec);
  auto metrics_api = MetricsApiFromArgs(args);
  if (!metrics_api.ok()) return Fail(metrics_api.status());
  JobClient& client = **connected;
  auto job = client.Create(*spec);
  if (!job.ok() && local->has_value()) return Fail(WithDataRootAdvice(job.status(), *spec, **local));
  if (!job.ok()) return Fail(job.status());
  if (!args.Has("wait")) {
    std::printf("%s", Show(*job, parsed->format, JobJson(*job), job->name() + "\n", v1::Job::descriptor()).c_str());
    return 0;
  }
  std::fprintf(parsed->format == OutputFormat::kTable ? stdout : stderr, "%s submitted\n", job->name().c_str());
  return WatchToEnd(client, job->name(), parsed->format, *metrics_api);
}

int GetCommand(const std::vector<std::string>& argv) {
  auto parsed = Parse("get", argv, 1);
  if (!parsed.ok()) return Fail(parsed.status());
  auto connected = ConnectJobClient(parsed->args);
  if (!connected.ok()) return Fail(connected.status());
  JobClient& client = **connected;
  auto job = client.Get(parsed->args.positional[0]);
  if (!job.ok()) return Fail(job.status());
  std::string text = DescribeJob(*job);
  if (parsed->format == OutputFormat::kWide) {
    v1::ListJobsResponse one;
    *one.add_jobs() = *job;
    text = JobTable(one, /*wide=*/true);
  }
  std::printf("%s", Show(*job, parsed->format, JobJson(*job), text, v1::Job::descriptor()).c_str());
  return 0;
}

int ListCommand(const std::vector<std::string>& argv) {
  auto parsed = Parse("list", argv, 0);
  if (!parsed.ok()) return Fail(parsed.status());
  auto page_size = parsed->args.GetInt("page-size", 100, 1, 1000);
  if (!page_size.ok()) return Fail(page_size.status());
  auto connected = ConnectJobClient(parsed->args);
  if (!connected.ok()) return Fail(connected.status());
  JobClient& client = **connected;
  absl::StatusOr<v1::ListJobsResponse> listed = ListAllJobs(client, *page_size);
  if (!listed.ok()) return Fail(listed.status());
  v1::ListJobsResponse& all = *listed;
  std::string out;
  switch (parsed->format) {
    case OutputFormat::kJson:
    case OutputFormat::kYaml: {
      std::vector<std::string> items;
      for (const v1::Job& j : all.jobs()) items.push_back(JobJson(j));
      out = InFormat(JsonItems(items), parsed->format, v1::Job::descriptor());
      break;
    }
    case OutputFormat::kName:
      for (const v1::Job& j : all.jobs()) absl::StrAppend(&out, j.name(), "\n");
      break;
    default: out = JobTable(all, parsed->format == OutputFormat::kWide);
  }
  std::printf("%s", out.c_str());
  return 0;
}

int CancelCommand(const std::vector<std::string>& argv) {
  auto parsed = Parse("cancel", argv, 1);
  if (!parsed.ok()) return Fail(parsed.status());
  auto connected = ConnectJobClient(parsed->args);
  if (!connected.ok()) return Fail(connected.status());
  JobClient& client = **connected;
  auto job = client.Cancel(parsed->args.positional[0]);
  if (!job.ok()) return Fail(job.status());
  if (!IsTerminal(job->state())) {
    // A running job stops at its next step boundary and saves its weights first: wait for its end
    // (the coordinator bounds it, --cancel_grace_ms).
    std::fprintf(stderr, "%s %s: %s\n", job->name().c_str(), v1::JobState_Name(job->state()).c_str(),
                 job->state_reason().c_str());
    job = client.Watch(
        job->name(), [](const v1::Job&) {}, nullptr);
    if (!job.ok()) return Fail(job.status());
  }
  // Ended is not yet stopped: a rank told to stop may still be writing or exiting on its worker.
  // CANCELLED is printed once every worker of the job is free for the next one.
  if (absl::Status s = AwaitWorkersFreed(client, job->id(), absl::Seconds(60)); !s.ok()) {
    std::fprintf(stderr, "%s\n", DescribeError(s).c_str());
  }
  const std::string text = absl::StrCat(job->name(), " ", v1::JobState_Name(job->state()), "\n");
  std::printf("%s", Show(*job, parsed->format, JobJson(*job), text, v1::Job::descriptor()).c_str());
  return 0;
}

int WatchCommand(const std::vector<std::string>& argv) {
  auto parsed = Parse("watch", argv, 1);
  if (!parsed.ok()) return Fail(parsed.status());
  auto connected = ConnectJobClient(parsed->args);
  if (!connected.ok()) return Fail(connected.status());
  auto metrics_api = MetricsApiFromArgs(parsed->args);
  if (!metrics_api.ok()) return Fail(metrics_api.status());
  JobClient& client = **connected;
  return WatchToEnd(client, parsed->args.positional[0], parsed->format, *metrics_api);
}

// Its rows of the command table (command_table.h).
std::vector<Command> JobRows() {
  using F = OutputFormat;
  const std::vector<OptionDoc> job_options = JobOptions();
  std::vector<Command> t;
  t.push_back({.name = "submit",
               .synopsis = "FILE|-- COMMAND... [--workers N] [--set path=value ...] [--wait]",
               .summary = "submit a job; with --wait, follow it to its end as run does",
               .example = "gradsync submit examples/jobs/mlp.yaml --set training.maxSteps=200 --wait",
               .details = "Prints the job's name (jobs/<id>), or with --wait its progress and summary (exit 0 only\n"
                          "when it SUCCEEDED). Relative data paths of a spec submitted to a local cluster start in\n"
                          "the current directory. After \"--\", a command instead (a script job): each of the\n"
                          "--workers N ranks runs it with torchrun's environment, in the current directory, which\n"
                          "must lie in the cluster's data roots and be where every worker sees it. --resume-from JOB\n"
                          "continues JOB's run (ended, same model, data and batch shape) from its newest checkpoint:\n"
                          "its step, learning-rate schedule, optimizer state and data position, at any world size.\n",
               .options = Plus({{"set", "path=value"}, {"workers", "N"}, {"resume-from", "JOB"}, {"wait", ""}, Output()},
                               job_options),
               .formats = {F::kTable, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .operands = Operands::kFiles,
               .run = SubmitCommand});
  t.push_back({.name = "get",
               .synopsis = "JOB",
               .summary = "a job described: spec highlights, times, restarts, progress, checkpoints, events",
               .example = "gradsync get jobs/mlp-1a2b3",
               .details = "JOB is jobs/<id> or the bare id. -o wide prints the job as one row of gradsync list -o\n"
                          "wide; -o json and -o yaml the whole job as the API returns it.\n",
               .options = Plus({Output()}, job_options),
               .formats = {F::kTable, F::kWide, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .run = GetCommand});
  t.push_back({.name = "list",
               .synopsis = "[--page-size N]",
               .summary = "every job, in the order they were submitted",
               .example = "gradsync list -o wide",
               .details = "-o json prints {\"items\": [...]}, each item a job as get -o json prints it.\n",
               .options = Plus({{"page-size", "N"}, Output()}, job_options),
               .formats = {F::kTable, F::kWide, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .run = ListCommand});
  t.push_back({.name = "cancel",
               .synopsis = "JOB",
               .summary = "cancel a job; a running one stops at its next step boundary and saves its weights",
               .example = "gradsync cancel jobs/mlp-1a2b3",
               .options = Plus({Output()}, job_options),
               .formats = {F::kTable, F::kJson, F::kYaml, F::kName},
               .connects = true,
               .run = CancelCommand});
  t.push_back({.name = "watch",
               .synopsis = "JOB",
               .summary = "follow a job's progress and loss curve to its end, then print its summary",
               .example = "gradsync watch jobs/mlp-1a2b3",
               .details = "Exit 0 when the job SUCCEEDED, 1 when it failed or was cancelled. With the metrics API\n"
                          "(--metrics-api, or a local cluster's) the final curve has every step.\n",
               .options = Plus({Output()}, job_options),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = WatchCommand});
  return t;
}

}  // namespace gradsync::cli
