// What the command table's rows share, and each command file's rows: every cmd_*.cc declares the
// rows of its commands (synopsis, summary, example, options, formats) beside the runner that
// parses with them, and command_table.cc lists them in the order of `gradsync --help`.
#pragma once

#include <string>
#include <vector>

#include "command_table.h"

namespace gradsync::cli {

// The options that reach a coordinator: --address, --token, --token-file, --tls-ca,
// --tls-server-name and --state-dir.
const std::vector<OptionDoc>& ConnectionOptions();
// The options that reach the metrics API: --metrics-api, --metrics-token-file and --state-dir.
const std::vector<OptionDoc>& MetricsApiOptions();
// Both: what every job command takes.
std::vector<OptionDoc> JobOptions();
// `options`, then those of `more` it lacks.
std::vector<OptionDoc> Plus(std::vector<OptionDoc> options, const std::vector<OptionDoc>& more);
// -o/--output with a value named `value`.
OptionDoc Output(std::string value = "FORMAT");

// The --device and --no-cpu-binding paragraph of run's and local up's help.
extern const char kDevicesHelp[];

// The rows of each command file, in the order `gradsync --help` lists them.
std::vector<Command> RunRows();         // cmd_run.cc
std::vector<Command> LocalRows();       // cmd_local.cc
std::vector<Command> JobRows();         // cmd_jobs.cc: submit, get, list, cancel, watch
std::vector<Command> LogsRows();        // cmd_logs.cc
std::vector<Command> WorkersRows();     // cmd_workers.cc
std::vector<Command> ArtifactsRows();   // cmd_artifacts.cc
std::vector<Command> ReportRows();      // cmd_report.cc
std::vector<Command> HealthRows();      // cmd_health.cc
std::vector<Command> ModelRows();       // cmd_model.cc
std::vector<Command> CheckpointRows();  // cmd_checkpoint.cc
std::vector<Command> DataRows();        // cmd_data.cc
std::vector<Command> GenerateRows();    // cmd_generate.cc
std::vector<Command> ExportRows();      // cmd_export.cc
std::vector<Command> VersionRows();     // cmd_version.cc
std::vector<Command> CompletionRows();  // cmd_completion.cc

}  // namespace gradsync::cli
