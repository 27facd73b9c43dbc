// gradsync workers: the coordinator's worker pool, as JobService.ListWorkers reports it.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "display.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/core/args.h"
#include "job_client.h"
#include "output_format.h"

namespace gradsync::cli {
namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", DescribeError(s).c_str());
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

std::string StateText(v1::WorkerState state) {
  switch (state) {
    case v1::WORKER_IDLE: return "idle";
    case v1::WORKER_BUSY: return "busy";
    case v1::WORKER_LOST: return "lost";
    default: return "-";
  }
}

// "cpu", "cuda:1".
std::string DeviceText(const v1::Device& d) {
  if (d.kind() == v1::Device::CUDA) return absl::StrCat("cuda:", d.gpu_index());
  if (d.kind() == v1::Device::CPU) return "cpu";
  return "-";
}

// kubectl's ages: "7s", "3m05s", "2h10m".
std::string Age(const google::protobuf::Duration& d) {
  const int64_t s = std::max<int64_t>(0, d.seconds());
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s / 60) % 60);
}

std::string Utc(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "-";
  return UtcTime(t);
}

// One line per worker: id, host, device, state, the job and rank it holds, heartbeat age; `wide`
// adds the pid, the generation, the device's description and when it registered (or was lost).
std::string Table(const v1::ListWorkersResponse& workers, bool wide) {
  std::string out = absl::StrFormat("%-20s %-16s %-8s %-6s %-24s %-5s %-10s", "ID", "HOST", "DEVICE", "STATE", "JOB",
                                    "RANK", "HEARTBEAT");
  if (wide)
    absl::StrAppend(&out,
                    absl::StrFormat(" %-8s %-4s %-20s %-20s %s", "PID", "GEN", "REGISTERED", "LOST", "DESCRIPTION"));
  absl::StrAppend(&out, "\n");
  for (const v1::Worker& w : workers.workers()) {
    absl::StrAppend(
        &out,
        absl::StrFormat("%-20s %-16s %-8s %-6s %-24s %-5s %-10s", TerminalSafe(w.id()), TerminalSafe(w.hostname()), DeviceText(w.device()),
                        StateText(w.state()), w.job_id().empty() ? "-" : w.job_id(),
                        w.has_rank() ? absl::StrCat(w.rank()) : "-", absl::StrCat(Age(w.heartbeat_age()), " ago")));
    if (wide) {
      absl::StrAppend(&out, absl::StrFormat(" %-8d %-4s %-20s %-20s %s", w.pid(),
                                            w.generation() > 0 ? absl::StrCat(w.generation()) : "-",
                                            Utc(w.register_time()), Utc(w.lost_time()),
                                            TerminalSafe(w.device().description())));
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string WorkerJson(const v1::Worker& w) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(w, &out, options);
  return out;
}

}  // namespace

int WorkersCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("workers", argv);
  if (!args.ok()) return Fail(args.status());
  absl::StatusOr<OutputFormat> format = OutputFormatOf("workers", *args);
  if (!format.ok()) return Fail(format.status());
  if (!args->positional.empty()) {
    std::fprintf(stderr, "%s", UsageLine(*FindCommand("workers")).c_str());
    return 2;
  }
  auto client = ConnectJobClient(*args);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::ListWorkersResponse> workers = (*client)->ListWorkers();
  if (!workers.ok()) return Fail(workers.status());
  if (*format == OutputFormat::kJson || *format == OutputFormat::kYaml) {
    std::vector<std::string> items;
    for (const v1::Worker& w : workers->workers()) items.push_back(WorkerJson(w));
    std::printf("%s", InFormat(JsonItems(items), *format, v1::Worker::descriptor()).c_str());
    return 0;
  }
  std::printf("%s", Table(*workers, *format == OutputFormat::kWide).c_str());
  return 0;
}

// Its rows of the command table (command_table.h).
std::vector<Command> WorkersRows() {
  using F = OutputFormat;
  std::vector<Command> t;
  t.push_back({.name = "workers",
               .synopsis = "",
               .summary = "the worker pool: each worker's host, device and state (idle, busy with a rank, lost)",
               .example = "gradsync workers -o wide",
               .details = "Lists the registered workers, then those lost (no heartbeat for the lease timeout) within\n"
                          "the last hour. HEARTBEAT is how long ago the coordinator last heard from each. -o wide\n"
                          "adds the pid, the generation and when the worker registered.\n",
               .options = Plus({Output()}, ConnectionOptions()),
               .formats = {F::kTable, F::kWide, F::kJson, F::kYaml},
               .connects = true,
               .run = WorkersCommand});
  return t;
}

}  // namespace gradsync::cli
