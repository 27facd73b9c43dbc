#include "overrides.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "field_names.h"
#include "spec_text.h"

namespace gradsync::spec::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// The key under which `map` already holds the field `name` refers to, else `name` itself.
std::string ExistingKey(const YAML::Node& map, const std::string& name, const FieldDescriptor* field) {
  if (field == nullptr) return name;
  for (const auto& entry : map) {
    if (entry.first.IsScalar() &&
        (entry.first.Scalar() == field->json_name() || entry.first.Scalar() == field->name())) {
      return entry.first.Scalar();
    }
  }
  return name;
}

// Sets `value` at segments[index...] below `map`; `descriptor` may be null once the path has
// left the schema (the converter then reports the unknown field).
absl::Status SetPath(YAML::Node map, const std::vector<std::string>& segments, size_t index,
                     const Descriptor* descriptor, const YAML::Node& value) {
  const std::string& name = segments[index];
  const FieldDescriptor* field = descriptor ? FindField(*descriptor, name) : nullptr;
  const std::string key = ExistingKey(map, name, field);
  if (index + 1 == segments.size()) {
    map[key] = value;
    return absl::OkStatus();
  }
  YAML::Node child = map[key];
  if (!child.IsDefined() || child.IsNull()) {
    map[key] = YAML::Node(YAML::NodeType::Map);
    child.reset(map[key]);
  } else if (!child.IsMap()) {
    const std::string walked = absl::StrJoin(segments.begin(), segments.begin() + index + 1, ".");
    return absl::InvalidArgumentError(absl::StrCat(walked, " is not a map of fields"));
  }
  return SetPath(child, segments, index + 1, field ? field->message_type() : nullptr, value);
}

absl::Status ApplyOne(const std::string& override_text, const Descriptor& descriptor, YAML::Node root) {
  const size_t equals = override_text.find('=');
  if (equals == std::string::npos) {
    return absl::InvalidArgumentError("expected path=value");
  }
  const std::string path = override_text.substr(0, equals);
  if (path.empty()) return absl::InvalidArgumentError("empty path, expected path=value");
  const std::vector<std::string> segments = absl::StrSplit(path, '.');
  for (const std::string& segment : segments) {
    if (segment.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("empty field name in path ", path));
    }
  }
  const absl::StatusOr<std::string> text = CheckSpecText(absl::string_view(override_text).substr(equals + 1));
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("value: ", text.status().message()));
  YAML::Node value;
  try {
    value = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("value: ", e.msg));
  }
  return SetPath(root, segments, 0, &descriptor, value);
}

}  // namespace

absl::Status ApplyOverrides(const std::vector<std::string>& overrides, const google::protobuf::Descriptor& descriptor,
                            YAML::Node root) {
  for (const std::string& override_text : overrides) {
    absl::Status status = ApplyOne(override_text, descriptor, root);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("override \"", override_text, "\": ", status.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync::spec::internal
