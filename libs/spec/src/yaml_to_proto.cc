#include "yaml_to_proto.h"

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "field_names.h"
#include "scalars.h"
#include "utf8.h"

namespace gradsync::spec::internal {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// "<path>: <text>", or the text alone for the top-level map, which has no path.
absl::Status AtPath(const std::string& path, absl::string_view text) {
  if (path.empty()) return absl::InvalidArgumentError(text);
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", text));
}

absl::Status Problem(const std::string& path, absl::string_view problem, const YAML::Node& node) {
  return AtPath(path, absl::StrCat(problem, ", got ", DescribeNode(node)));
}

template <typename To, typename From>
absl::StatusOr<To> Narrow(const absl::StatusOr<From>& value) {
  if (!value.ok()) return value.status();
  return static_cast<To>(*value);
}

// What a scalar field of this type expects, for nodes that are not scalars at all.
absl::string_view Expectation(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: return "expected an integer";
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: return "expected a number";
    case FieldDescriptor::CPPTYPE_BOOL: return "expected true or false";
    case FieldDescriptor::CPPTYPE_ENUM: return "expected an enum value name";
    case FieldDescriptor::CPPTYPE_STRING: return "expected a string";
    case FieldDescriptor::CPPTYPE_MESSAGE: return "expected a map of fields";
  }
  return "expected a value";
}

template <typename T>
absl::Status Store(const absl::StatusOr<T>& value, const std::string& path, const YAML::Node& node,
                   void (Reflection::*set)(Message*, const FieldDescriptor*, T) const, Message* message,
                   const FieldDescriptor* field) {
  if (!value.ok()) return Problem(path, value.status().message(), node);
  (message->GetReflection()->*set)(message, field, *value);
  return absl::OkStatus();
}

// Sets (or for a repeated field, appends) one scalar value.
absl::Status StoreScalar(const YAML::Node& node, const std::string& path, const FieldDescriptor* field,
                         Message* message) {
  if (!node.IsScalar()) return Problem(path, Expectation(*field), node);
  const std::string& text = node.Scalar();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const absl::StatusOr<int32_t> value =
          Narrow<int32_t>(ParseInteger(text, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
      return Store(value, path, node, repeated ? &Reflection::AddInt32 : &Reflection::SetInt32, message, field);
    }
    case FieldDescriptor::CPPTYPE_INT64:
      return Store(ParseInteger(text, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()), path,
                   node, repeated ? &Reflection::AddInt64 : &Reflection::SetInt64, message, field);
    case FieldDescriptor::CPPTYPE_UINT32: {
      const absl::StatusOr<uint32_t> value =
          Narrow<uint32_t>(ParseUnsigned(text, std::numeric_limits<uint32_t>::max()));
      return Store(value, path, node, repeated ? &Reflection::AddUInt32 : &Reflection::SetUInt32, message, field);
    }
    case FieldDescriptor::CPPTYPE_UINT64:
      return Store(ParseUnsigned(text, std::numeric_limits<uint64_t>::max()), path, node,
                   repeated ? &Reflection::AddUInt64 : &Reflection::SetUInt64, message, field);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return Store(ParseNumber(text), path, node, repeated ? &Reflection::AddDouble : &Reflection::SetDouble, message,
                   field);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return Store(Narrow<float>(ParseNumber(text)), path, node,
                   repeated ? &Reflection::AddFloat : &Reflection::SetFloat, message, field);
    case FieldDescriptor::CPPTYPE_BOOL:
      return Store(ParseBoolean(text), path, node, repeated ? &Reflection::AddBool : &Reflection::SetBool, message,
                   field);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const google::protobuf::EnumDescriptor* type = field->enum_type();
      const google::protobuf::EnumValueDescriptor* value = type->FindValueByName(text);
      if (value == nullptr) {
        std::vector<std::string> names;
        for (int i = 0; i < type->value_count(); ++i) names.push_back(type->value(i)->name());
        return Problem(path, absl::StrCat("expected one of ", absl::StrJoin(names, ", ")), node);
      }
      const Reflection* reflection = message->GetReflection();
      repeated ? reflection->AddEnum(message, field, value) : reflection->SetEnum(message, field, value);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      // Refused here, before the copy, and by name without echoing the text.
      if (text.size() > kMaxStringBytes) {
        return AtPath(path, absl::StrCat("must be at most ", kMaxStringBytes, " bytes, got ", text.size(), " bytes"));
      }
      const Reflection* reflection = message->GetReflection();
      repeated ? reflection->AddString(message, field, text) : reflection->SetString(message, field, text);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
  return Problem(path, "unsupported field type", node);
}

// Sets one element: a nested message from a map, or a scalar.
absl::Status StoreValue(const YAML::Node& node, const std::string& path, const FieldDescriptor* field,
                        Message* message) {
  if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
    return StoreScalar(node, path, field, message);
  }
  if (!node.IsMap()) return Problem(path, "expected a map of fields", node);
  const Reflection* reflection = message->GetReflection();
  Message* child =
      field->is_repeated() ? reflection->AddMessage(message, field) : reflection->MutableMessage(message, field);
  return YamlToMessage(node, path, child);
}

// A map field (string keys, scalar values, as script.env): one entry per key of a YAML map.
absl::Status StoreMap(const YAML::Node& node, const std::string& path, const FieldDescriptor* field, Message* message) {
  if (!node.IsMap()) return Problem(path, "expected a map of names to values", node);
  const Descriptor& entry_type = *field->message_type();
  const FieldDescriptor* key_field = entry_type.map_key();
  const FieldDescriptor* value_field = entry_type.map_value();
  std::map<std::string, bool> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) return Problem(path, "keys must be strings", entry.first);
    const std::string key = entry.first.Scalar();
    const std::string entry_path = JoinPath(path, key);
    if (!seen.emplace(key, true).second) return AtPath(entry_path, "set twice");
    if (!entry.second.IsScalar()) return Problem(entry_path, "expected a value", entry.second);
    Message* added = message->GetReflection()->AddMessage(message, field);
    added->GetReflection()->SetString(added, key_field, key);
    absl::Status status = StoreScalar(entry.second, entry_path, value_field, added);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status StoreField(const YAML::Node& node, const std::string& path, const FieldDescriptor* field,
                        Message* message) {
  if (field->is_map()) return StoreMap(node, path, field, message);
  if (!field->is_repeated()) return StoreValue(node, path, field, message);
  if (!node.IsSequence()) return Problem(path, "expected a sequence", node);
  for (size_t i = 0; i < node.size(); ++i) {
    absl::Status status = StoreValue(node[i], absl::StrCat(path, "[", i, "]"), field, message);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace

std::string DescribeNode(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: return absl::StrCat("\"", absl::CHexEscape(node.Scalar()), "\"");
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: break;
  }
  return "null";
}

absl::Status YamlToMessage(const YAML::Node& node, const std::string& path, Message* message) {
  const Descriptor& descriptor = *message->GetDescriptor();
  // Which key set each field, to catch one field written twice (worldSize and world_size).
  std::map<const FieldDescriptor*, std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return Problem(path, "field names must be strings", entry.first);
    }
    const std::string& key = entry.first.Scalar();
    const FieldDescriptor* field = FindField(descriptor, key);
    const std::string field_path = JoinPath(path, field ? field->json_name() : key);
    if (field == nullptr) {
      return AtPath(field_path, absl::StrCat("unknown field", SuggestField(descriptor, key)));
    }
    if (entry.second.IsNull()) continue;
    if (auto [it, inserted] = seen.emplace(field, key); !inserted) {
      if (it->second == key) return AtPath(field_path, "set twice");
      return AtPath(field_path, absl::StrCat("set twice, as ", it->second, " and as ", key));
    }
    if (const google::protobuf::OneofDescriptor* oneof = field->containing_oneof()) {
      const FieldDescriptor* other = message->GetReflection()->GetOneofFieldDescriptor(*message, oneof);
      if (other != nullptr && other != field) {
        return AtPath(path, absl::StrCat(other->json_name(), " and ", field->json_name(),
                                         " are both set, but only one of ", oneof->name(), " may be"));
      }
    }
    absl::Status status = StoreField(entry.second, field_path, field, message);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace gradsync::spec::internal
