// `--set path=value` overrides, applied to the YAML tree before it becomes a proto so that an
// override is checked exactly like the same value written in the file.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/descriptor.h"
#include "yaml-cpp/yaml.h"

namespace gradsync::spec::internal {

// Applies each "path=value" of `overrides`, in order, to the map `root`, which describes a
// message of type `descriptor`. The path is dotted field names; missing intermediate maps are
// created. The value is parsed as YAML, so "[64, 64]" is a list and an empty value clears the
// field. A path segment that names a field the tree already holds under its other spelling
// (world_size for worldSize) replaces that entry rather than adding a second one.
// Errors are INVALID_ARGUMENT "override \"<override>\": <problem>".
absl::Status ApplyOverrides(const std::vector<std::string>& overrides, const google::protobuf::Descriptor& descriptor,
                            YAML::Node root);

}  // namespace gradsync::spec::internal
