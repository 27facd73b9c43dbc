// gradsync artifacts list | get: a job's files (weights, checkpoints, exports, reports) from the
// coordinator's artifact root, over gRPC or REST, without access to its volume.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "artifact_download.h"
#include "command_rows.h"
#include "command_table.h"
#include "commands.h"
#include "connection.h"
#include "display.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/terminal_text.h"
#include "gradsync/core/args.h"
#include "gradsync/core/shutdown.h"
#include "job_client.h"
#include "output_format.h"

namespace gradsync::cli {
namespace {

int Usage(const std::string& message) {
  if (!message.empty()) std::fprintf(stderr, "%s\n", message.c_str());
  std::fputs(GroupUsage("artifacts").c_str(), stderr);
  return 2;
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", DescribeError(s).c_str());
  if (s.code() == absl::StatusCode::kCancelled) return 130;
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// One line per file: path, bytes, human size, modification time (UTC), and with `sha256` the digest.
std::string Table(const v1::ListArtifactsResponse& listed, bool sha256) {
  std::string out =
      absl::StrFormat("%-48s %14s %10s  %-20s%s\n", "PATH", "BYTES", "SIZE", "MODIFIED", sha256 ? " SHA256" : "");
  for (const v1::Artifact& a : listed.artifacts()) {
    absl::StrAppendFormat(&out, "%-48s %14d %10s  %-20s%s\n", TerminalSafe(a.path()), a.size_bytes(), HumanBytes(a.size_bytes()),
                          UtcTime(a.modify_time()), sha256 ? " " + a.sha256() : "");
  }
  // No padding at the ends of lines.
  std::string trimmed;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&trimmed, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return trimmed;
}

// The listing as protobuf JSON, as the REST API answers it ({"artifacts": []} when empty).
std::string Json(const v1::ListArtifactsResponse& listed) {
  if (listed.artifacts().empty()) return "{\"artifacts\": []}";
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  (void)google::protobuf::util::MessageToJsonString(listed, &out, options);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int List(JobClient& client, const Args& args, OutputFormat format) {
  if (args.positional.size() < 2 || args.positional.size() > 3) return Usage("");
  const bool sha256 = args.Has("sha256");
  auto listed = client.ListArtifacts(args.positional[1], args.positional.size() == 3 ? args.positional[2] : "", sha256);
  if (!listed.ok()) return Fail(listed.status());
  std::printf(
      "%s", format == OutputFormat::kTable ? Table(*listed, sha256).c_str() : InFormat(Json(*listed), format, v1::ListArtifactsResponse::descriptor()).c_str());
  return 0;
}

int Get(JobClient& client, const Args& args) {
  if (args.positional.size() < 2 || args.positional.size() > 3) return Usage("");
  const std::string& job = args.positional[1];
  std::vector<std::string> paths;
  if (args.positional.size() == 3) {
    paths.push_back(args.positional[2]);
  } else {
    auto listed = client.ListArtifacts(job, "", false);
    if (!listed.ok()) return Fail(listed.status());
    for (const v1::Artifact& a : listed->artifacts()) paths.push_back(a.path());
    if (paths.empty()) std::fprintf(stderr, "%s has no artifacts yet\n", job.c_str());
  }
  InstallShutdownHandlers();
  const std::string dir = args.Get("output", ".");
  for (const std::string& path : paths) {
    absl::StatusOr<Downloaded> done = DownloadArtifact(client, job, path, dir, stderr);
    if (!done.ok()) return Fail(done.status());
    // sha256sum's format: `sha256sum -c` checks the files again.
    std::printf("%s  %s\n", done->sha256.c_str(), done->file.c_str());
    std::fflush(stdout);
  }
  return 0;
}

int ArtifactsListCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("artifacts list", argv);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  absl::StatusOr<OutputFormat> format = OutputFormatOf("artifacts list", *args);
  if (!format.ok()) return Usage(std::string(format.status().message()));
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  return List(**connected, *args, *format);
}

// Its -o is a directory.
int ArtifactsGetCommand(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = ParseCommandArgs("artifacts get", argv);
  if (!args.ok()) return Usage(std::string(args.status().message()));
  auto connected = ConnectJobClient(*args);
  if (!connected.ok()) return Fail(connected.status());
  return Get(**connected, *args);
}

}  // namespace

int ArtifactsCommand(const std::vector<std::string>& argv) { return RunSubcommand("artifacts", argv); }

// Its rows of the command table (command_table.h).
std::vector<Command> ArtifactsRows() {
  using F = OutputFormat;
  std::vector<Command> t;
  t.push_back({.name = "artifacts list",
               .synopsis = "JOB [PREFIX] [--sha256]",
               .summary = "a job's files on the coordinator (weights, checkpoints, exports), with sizes",
               .example = "gradsync artifacts list jobs/mlp-1a2b3 --sha256",
               .details = "Paths start with PREFIX when given; with --sha256 each file's digest (the coordinator\n"
                          "reads them). -o json is the API's ListArtifactsResponse.\n",
               .options = Plus({Output(), {"sha256", ""}}, ConnectionOptions()),
               .formats = {F::kTable, F::kJson, F::kYaml},
               .connects = true,
               .run = ArtifactsListCommand});
  t.push_back({.name = "artifacts get",
               .synopsis = "JOB [PATH] [-o DIR]",
               .summary = "download a job's file PATH, or every file, into DIR (default .)",
               .example = "gradsync artifacts get jobs/mlp-1a2b3 weights.bin -o out",
               .details = "Each file is checked against the coordinator's SHA-256 before it is renamed into place,\n"
                          "and printed as sha256sum prints it (so sha256sum -c checks it again).\n",
               .options = Plus({Output("DIR")}, ConnectionOptions()),
               .connects = true,
               .run = ArtifactsGetCommand});
  return t;
}

}  // namespace gradsync::cli
