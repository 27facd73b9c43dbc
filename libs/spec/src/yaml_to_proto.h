// Converts a parsed YAML tree to any proto message by reflection, so the job spec's schema lives
// in the .proto alone: a field added there is accepted here without code changes.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"
#include "yaml-cpp/yaml.h"

namespace gradsync::spec::internal {

// Sets the fields of `message` from the map `node`. Keys are JSON or proto field names; a null
// value leaves its field unset. `path` is the dotted JSON-name path of `node` ("" at the top).
// On failure returns INVALID_ARGUMENT "<path>: <problem>", e.g.
// "training.worldSize: expected an integer, got \"two\""; `message` is then partly filled.
absl::Status YamlToMessage(const YAML::Node& node, const std::string& path, google::protobuf::Message* message);

// How a node reads in an error: the scalar quoted and escaped, or "a map", "a sequence", "null".
std::string DescribeNode(const YAML::Node& node);

}  // namespace gradsync::spec::internal
