// How the keys users write map onto proto fields, shared by the converter and the overrides so
// both accept the same spellings.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace gradsync::spec::internal {

// The field of `descriptor` that `key` names by its JSON name (worldSize) or its proto name
// (world_size); nullptr if none does.
const google::protobuf::FieldDescriptor* FindField(const google::protobuf::Descriptor& descriptor,
                                                   absl::string_view key);

// "; did you mean worldSize?" when a field's JSON name is a likely misspelling of `key`,
// otherwise "".
std::string SuggestField(const google::protobuf::Descriptor& descriptor, absl::string_view key);

// `parent` and `name` joined with a dot, or `name` alone at the top level.
std::string JoinPath(absl::string_view parent, absl::string_view name);

}  // namespace gradsync::spec::internal
