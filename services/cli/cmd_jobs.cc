// gradsync submit | get | list | cancel | watch: clients of a running coordinator.
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "args.h"
#include "commands.h"
#include "connection.h"
#include "display.h"
#include "gradsync/core/shutdown.h"
#include "job_client.h"
#include "spec_input.h"

namespace gradsync::cli {
namespace {

// Every job command takes the connection options, the metrics API's and -o.
std::vector<OptionSpec> With(std::vector<OptionSpec> extra) {
  extra.push_back({"output", true, 'o'});
  return WithMetricsApiOptions(WithConnectionOptions(std::move(extra)));
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", DescribeError(s).c_str());
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// Parses and checks that exactly `n` positional arguments came.
absl::StatusOr<Args> Parse(const std::string& cmd, const std::vector<std::string>& argv,
                           const std::vector<OptionSpec>& options, size_t n, const char* usage) {
  auto args = ParseArgs(cmd, argv, options);
  if (!args.ok()) return args.status();
  if (args->positional.size() != n) return absl::InvalidArgumentError(absl::StrCat("usage: ", usage));
  return args;
}

// Watches to the end with progress; exit code 0 only for SUCCEEDED. With a metrics API address
// the final loss curve has every step.
int WatchToEnd(JobClient& client, const std::string& name, bool json, const MetricsApi& metrics_api) {
  InstallShutdownHandlers();
  std::atomic<bool> stop{false};
  std::thread sig([&] {
    while (!stop && !WaitForShutdown(absl::Milliseconds(100))) {
    }
    stop = true;
  });
  ProgressView view(json ? stderr : stdout);
  auto job = client.Watch(
      name, [&](const v1::Job& j) { view.Update(j); }, &stop);
  if (job.ok() && !metrics_api.address.empty()) {
    (void)view.UseSeriesFrom(metrics_api.address, metrics_api.token, job->id());
  }
  view.Finish();
  stop = true;
  sig.join();
  if (!job.ok()) return job.status().code() == absl::StatusCode::kCancelled ? 130 : Fail(job.status());
  std::printf("%s", json ? (SummaryJson(*job) + "\n").c_str() : SummaryText(*job).c_str());
  return job->state() == v1::SUCCEEDED ? 0 : 1;
}

}  // namespace

int SubmitCommand(const std::vector<std::string>& argv) {
  auto args = Parse("submit", argv, With({{"set"}, {"wait", false}}), 1,
                    "gradsync submit FILE [--set path=value ...] [--wait] [--address ADDRESS]");
  if (!args.ok()) return Fail(args.status());
  auto spec = LoadSpecFromCommandLine(args->positional[0], args->GetAll("set"), 0);
  if (!spec.ok()) return Fail(spec.status());
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  auto metrics_api = MetricsApiFromArgs(*args);
  if (!metrics_api.ok()) return Fail(metrics_api.status());
  JobClient& client = **connected;
  auto job = client.Create(*spec);
  if (!job.ok()) return Fail(job.status());
  const bool json = args->Get("output") == "json";
  if (!args->Has("wait")) {
    std::printf("%s", json ? (JobJson(*job) + "\n").c_str() : absl::StrCat(job->name(), "\n").c_str());
    return 0;
  }
  std::fprintf(json ? stderr : stdout, "%s submitted\n", job->name().c_str());
  return WatchToEnd(client, job->name(), json, *metrics_api);
}

int GetCommand(const std::vector<std::string>& argv) {
  auto args = Parse("get", argv, With({}), 1, "gradsync get JOB [-o json] [--address ADDRESS]");
  if (!args.ok()) return Fail(args.status());
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  JobClient& client = **connected;
  auto job = client.Get(args->positional[0]);
  if (!job.ok()) return Fail(job.status());
  if (args->Get("output") == "json") {
    std::printf("%s\n", JobJson(*job).c_str());
  } else {
    v1::ListJobsResponse one;
    *one.add_jobs() = *job;
    std::printf("%s", JobTable(one).c_str());
    for (const auto& e : job->events()) std::printf("  [%s] %s\n", e.type().c_str(), e.message().c_str());
  }
  return 0;
}

int ListCommand(const std::vector<std::string>& argv) {
  auto args = Parse("list", argv, With({{"page-size"}}), 0, "gradsync list [-o json] [--address ADDRESS]");
  if (!args.ok()) return Fail(args.status());
  auto page_size = args->GetInt("page-size", 100, 1, 1000);
  if (!page_size.ok()) return Fail(page_size.status());
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  JobClient& client = **connected;
  v1::ListJobsResponse all;
  std::string token;
  do {
    auto page = client.List(*page_size, token);
    if (!page.ok()) return Fail(page.status());
    for (auto& j : *page->mutable_jobs()) *all.add_jobs() = std::move(j);
    token = page->next_page_token();
  } while (!token.empty());
  if (args->Get("output") == "json") {
    std::string out = "[";
    for (int i = 0; i < all.jobs_size(); ++i) absl::StrAppend(&out, i ? ",\n" : "\n", JobJson(all.jobs(i)));
    std::printf("%s\n]\n", out.c_str());
  } else {
    std::printf("%s", JobTable(all).c_str());
  }
  return 0;
}

int CancelCommand(const std::vector<std::string>& argv) {
  auto args = Parse("cancel", argv, With({}), 1, "gradsync cancel JOB [--address ADDRESS]");
  if (!args.ok()) return Fail(args.status());
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  JobClient& client = **connected;
  auto job = client.Cancel(args->positional[0]);
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
  std::printf("%s %s\n", job->name().c_str(), v1::JobState_Name(job->state()).c_str());
  return 0;
}

int WatchCommand(const std::vector<std::string>& argv) {
  auto args = Parse("watch", argv, With({}), 1, "gradsync watch JOB [-o json] [--address ADDRESS]");
  if (!args.ok()) return Fail(args.status());
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  auto metrics_api = MetricsApiFromArgs(*args);
  if (!metrics_api.ok()) return Fail(metrics_api.status());
  JobClient& client = **connected;
  return WatchToEnd(client, args->positional[0], args->Get("output") == "json", *metrics_api);
}

}  // namespace gradsync::cli
