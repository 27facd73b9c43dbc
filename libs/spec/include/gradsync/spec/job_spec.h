// Job specs as users write them (YAML or JSON, with the proto's JSON field names) to and from
// gradsync.v1.JobSpec, with `--set path=value` overrides, defaults and validation.
//
// Every error is INVALID_ARGUMENT and names the field path and the problem, e.g.
//   "training.worldSize: expected an integer, got \"two\""
//   "training.wordSize: unknown field"
//   "training.microBatch: must be at least 1, got 0"
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::spec {

// checkpoint.keep when unset: the newest three committed checkpoints stay, older ones are removed
// as a new one commits.
inline constexpr int kDefaultCheckpointKeep = 3;

// Parses YAML or JSON text into a JobSpec, applying `overrides` ("path=value", value parsed as a
// YAML scalar or flow collection) before conversion. `source` names the text in errors (a path).
// Does not fill defaults or validate.
absl::StatusOr<gradsync::v1::JobSpec> ParseJobSpec(std::string_view text, std::string_view source,
                                                   const std::vector<std::string>& overrides = {});

// Reads and parses a file; NOT_FOUND if it cannot be read.
absl::StatusOr<gradsync::v1::JobSpec> LoadJobSpecFile(const std::string& path,
                                                      const std::vector<std::string>& overrides = {});

// Sets every unset field to its default (see the README in this folder for the table).
void FillDefaults(gradsync::v1::JobSpec* spec);

// Checks every field of a spec whose defaults are filled in.
absl::Status ValidateJobSpec(const gradsync::v1::JobSpec& spec);

// training.maxRestarts, or its default (3) when unset: the generations a job may start after
// failures before it fails for good.
int MaxRestarts(const gradsync::v1::TrainingSpec& training);

// FillDefaults then ValidateJobSpec.
absl::StatusOr<gradsync::v1::JobSpec> Normalize(gradsync::v1::JobSpec spec);

// Protobuf's JSON mapping, lowerCamelCase names.
std::string ToJson(const gradsync::v1::JobSpec& spec, bool pretty = true);

}  // namespace gradsync::spec
