// Reading a job spec from the command line: a file, --set overrides and --workers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/core/args.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::cli {

// The spec overrides a job command's options give: every --set, then --resume-from JOB as
// training.resumeFrom (a new job that continues JOB's run from its newest checkpoint).
std::vector<std::string> SpecOverrides(const Args& args);

// Reads `path` with `overrides`; when `workers` > 0 and no override names training.worldSize,
// the world size becomes `workers`. Fills defaults, validates and plans a model job as the
// coordinator will (spec::PlanJob); errors name the field.
absl::StatusOr<v1::JobSpec> LoadSpecFromCommandLine(const std::string& path, const std::vector<std::string>& overrides,
                                                    int workers);

// The command after the first "--" of `argv` (a subcommand's arguments), if there is one:
// `gradsync run --workers 2 -- python3 train.py` runs a script job.
std::optional<std::vector<std::string>> CommandAfterDashes(const std::vector<std::string>& argv);

// A script job (JobSpec.script) for `command`, run in the current directory (made absolute:
// the coordinator of a local cluster sees this machine's files), named after the script (the first
// argument after an interpreter such as python3, else the program), with `overrides` applied and
// `workers` ranks as LoadSpecFromCommandLine does. Fills defaults and validates.
absl::StatusOr<v1::JobSpec> ScriptSpecFromCommandLine(const std::vector<std::string>& command,
                                                      const std::vector<std::string>& overrides, int workers);

// Makes the relative data paths of `spec` (data.text.paths, data.shards.paths,
// data.validation.paths, and model.initFrom) absolute from `base`, the current directory when
// empty: how a spec submitted to a local cluster reads, its coordinator seeing this machine's
// files. The coordinator still confines them to its data roots.
void MakeDataPathsAbsolute(v1::JobSpec* spec, const std::string& base = "");

// The data roots of a cluster that runs only `spec` (`gradsync run`): the current directory, where
// relative data paths start, then the directory each data path names (up to its first glob
// component). Whoever runs it owns the spec and the cluster alike.
std::vector<std::string> RunDataRoots(const v1::JobSpec& spec);

// What the checkpoints of a model job that checkpoints periodically will take on disk, for stderr:
// "checkpoints: about 296.9 MiB each (weights and AdamW's two moments: 12 bytes a parameter),
// checkpoint.keep 3: up to 890.7 MiB kept"; "" for a job that only saves its final checkpoint,
// or a script job.
std::string CheckpointSizeNote(const v1::JobSpec& spec);

// The directories of `spec`'s data paths (RunDataRoots' after the current directory) that lie in
// none of `roots`: what a local cluster started with `roots` needs as --data-root to run it.
std::vector<std::string> DataDirsOutside(const v1::JobSpec& spec, const std::vector<std::string>& roots);

}  // namespace gradsync::cli
