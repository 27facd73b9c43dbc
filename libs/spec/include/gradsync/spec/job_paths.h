// The path-valued fields of a job spec and where they may point. data.text.paths,
// data.shards.paths and data.validation.paths (files or globs) must lie in the operator's data
// roots: the coordinator
// resolves them when the job is submitted, and a worker checks the files again right before it
// reads them. checkpoint.dir is no path at all: at most the name of a subdirectory of the job's own
// directory under the artifact root (ValidateJobSpec enforces the name). model.initFrom, weights to
// start from, must lie in a data root or the artifact root (another job's output).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gradsync/spec/confined_path.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::spec {

// One data path of a spec with its field, e.g. {"data.text.paths[1]", "corpus/*.txt"}.
struct DataPath {
  std::string field;
  std::string path;
};

// The data paths of `spec` (none for synthetic data), in order: the training source's, then
// data.validation.paths.
std::vector<DataPath> DataPaths(const v1::JobSpec& spec);

// The validation shards a job gets by default: when data.shards is set, data.validation has no
// paths and is not disabled, for each data.shards path whose last component starts with "train_"
// (a file or a glob), the glob "val_*.bin" in the same directory, once, if it matches a file now.
// Reads directories only; relative paths are taken as written.
std::vector<std::string> DefaultValidationPaths(const v1::JobSpec& spec);

// Replaces every data path of `spec` with its resolved form (ConfinedRoots::Resolve; relative
// paths start at the first data root), checks every file a path matches now
// (ConfinedRoots::CheckMatches), then sets data.validation.paths to DefaultValidationPaths of the
// resolved spec when there are any. INVALID_ARGUMENT naming the field, the path and the roots; the
// spec is unchanged on error.
absl::Status ConfineDataPaths(const ConfinedRoots& data_roots, v1::JobSpec* spec);

// The reader's check, right before it opens the files: every file each of `paths` (DataPaths of a
// spec) matches resolves inside `data_roots`. INVALID_ARGUMENT naming the field, the path and the
// roots.
absl::Status CheckDataFiles(const std::vector<DataPath>& paths, const ConfinedRoots& data_roots);

// Replaces model.init_from (when set) with its resolved form inside `roots` (the data roots and the
// artifact root; relative paths start at the first), as ConfineDataPaths does for data paths.
// INVALID_ARGUMENT "model.initFrom: ..." naming the path and the roots; the spec is unchanged on
// error.
absl::Status ConfineInitFrom(const ConfinedRoots& roots, v1::JobSpec* spec);

// The reader's check of model.init_from right before it is read: it resolves inside `roots`.
absl::Status CheckInitFrom(const v1::ModelSpec& model, const ConfinedRoots& roots);

// Replaces script.working_dir (a script job's) with its resolved form inside `data_roots` (relative:
// from the first root), as ConfineDataPaths does for data paths; it need not exist yet.
// INVALID_ARGUMENT "script.workingDir: ..." naming the path and the roots; the spec is unchanged on
// error. Nothing for other jobs.
absl::Status ConfineScriptDir(const ConfinedRoots& data_roots, v1::JobSpec* spec);

// The worker's check right before it starts the command: script.working_dir resolves, as it is
// now, inside `data_roots` and is a directory. INVALID_ARGUMENT or FAILED_PRECONDITION naming the
// field.
absl::StatusOr<std::string> CheckScriptDir(const v1::ScriptSpec& script, const ConfinedRoots& data_roots);

// Whether `dir` may be a checkpoint.dir: empty, or one directory name of at most 64 letters,
// digits, '.', '_' and '-' that does not start with '.'.
bool IsCheckpointSubdir(const std::string& dir);

}  // namespace gradsync::spec
