// How the keys users write map onto proto fields, shared by the converter and the overrides so
// both accept the same spellings.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace gradsync::spec::internal {

// The field of `descriptor` that `key` names by its JSON name (worldSize) or its proto name
// (world_size); nullptr if none does.
const google::protobuf::FieldDescriptor* FindField(const google::protobuf::Descriptor& descriptor,
                                                   absl::string_view key);

// What `key`, unknown in `descriptor`, may have meant: "; did you mean worldSize?" for a likely
// misspelling of a field's name; "; hiddenSize is Hugging Face's name for model.transformer.width"
// for another tool's name of a field; "; did you mean training.lr?" for a field of the spec's
// elsewhere; otherwise "".
std::string SuggestField(const google::protobuf::Descriptor& descriptor, absl::string_view key);

// Case-insensitive Levenshtein distance (names are short: the quadratic table is fine).
size_t EditDistance(absl::string_view a, absl::string_view b);

// Of `candidates`, the one closest to `name` by EditDistance if within `max_distance` (the first
// of equals); nullptr otherwise.
const std::string* Closest(absl::string_view name, const std::vector<const std::string*>& candidates,
                           size_t max_distance);

// `parent` and `name` joined with a dot, or `name` alone at the top level.
std::string JoinPath(absl::string_view parent, absl::string_view name);

}  // namespace gradsync::spec::internal
