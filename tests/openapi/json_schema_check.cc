#include "json_schema_check.h"

#include <cmath>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gradsync::testing {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

bool HasType(const Value& v, const std::string& type) {
  switch (v.kind_case()) {
    case Value::kStringValue: return type == "string";
    case Value::kBoolValue: return type == "boolean";
    case Value::kStructValue: return type == "object";
    case Value::kListValue: return type == "array";
    case Value::kNumberValue:
      return type == "number" || (type == "integer" && std::floor(v.number_value()) == v.number_value());
    default: return false;
  }
}

void CheckObject(const Struct& value, const Struct& schema, const Struct& document, const std::string& path,
                 std::vector<std::string>* errors) {
  const Value* properties = Field(schema, "properties");
  if (const Value* required = Field(schema, "required")) {
    for (const Value& name : required->list_value().values()) {
      if (Field(value, name.string_value()) == nullptr) {
        errors->push_back(absl::StrCat(path, ": lacks required ", name.string_value()));
      }
    }
  }
  const Value* additional = Field(schema, "additionalProperties");
  for (const auto& [key, field] : value.fields()) {
    const std::string at = absl::StrCat(path, ".", key);
    const Value* declared = properties != nullptr ? Field(properties->struct_value(), key) : nullptr;
    if (declared != nullptr) {
      for (std::string& e : SchemaErrors(field, *declared, document, at)) errors->push_back(std::move(e));
    } else if (additional != nullptr && additional->kind_case() == Value::kBoolValue && !additional->bool_value()) {
      errors->push_back(absl::StrCat(at, ": not in the schema"));
    } else if (additional != nullptr && additional->kind_case() == Value::kStructValue) {
      for (std::string& e : SchemaErrors(field, *additional, document, at)) errors->push_back(std::move(e));
    }
  }
}

}  // namespace

Value Resolve(const Struct& document, const std::string& ref) {
  if (!absl::StartsWith(ref, "#/")) return Value();
  Value at;
  *at.mutable_struct_value() = document;
  for (absl::string_view part : absl::StrSplit(ref.substr(2), '/')) {
    if (at.kind_case() != Value::kStructValue) return Value();
    const Value* next = Field(at.struct_value(), std::string(part));
    if (next == nullptr) return Value();
    Value copy = *next;
    at = std::move(copy);
  }
  return at;
}

std::vector<std::string> SchemaErrors(const Value& value, const Value& schema_value, const Struct& document,
                                      const std::string& path) {
  std::vector<std::string> errors;
  const Struct& schema = schema_value.struct_value();
  if (const Value* ref = Field(schema, "$ref")) {
    const Value target = Resolve(document, ref->string_value());
    if (target.kind_case() != Value::kStructValue)
      return {absl::StrCat(path, ": $ref ", ref->string_value(), " resolves to nothing")};
    return SchemaErrors(value, target, document, path);
  }
  if (const Value* type = Field(schema, "type"); type != nullptr && !HasType(value, type->string_value())) {
    return {absl::StrCat(path, ": expected ", type->string_value())};
  }
  if (const Value* allowed = Field(schema, "enum")) {
    bool found = false;
    for (const Value& a : allowed->list_value().values()) found = found || a.string_value() == value.string_value();
    if (!found) errors.push_back(absl::StrCat(path, ": \"", value.string_value(), "\" is not among the enum"));
  }
  if (const Value* pattern = Field(schema, "pattern");
      pattern != nullptr && !std::regex_search(value.string_value(), std::regex(pattern->string_value()))) {
    errors.push_back(absl::StrCat(path, ": \"", value.string_value(), "\" does not match ", pattern->string_value()));
  }
  if (const Value* min = Field(schema, "minimum"); min != nullptr && value.number_value() < min->number_value()) {
    errors.push_back(absl::StrCat(path, ": below the minimum"));
  }
  if (const Value* max = Field(schema, "maximum"); max != nullptr && value.number_value() > max->number_value()) {
    errors.push_back(absl::StrCat(path, ": above the maximum"));
  }
  if (value.kind_case() == Value::kStructValue) CheckObject(value.struct_value(), schema, document, path, &errors);
  if (const Value* items = Field(schema, "items"); items != nullptr && value.kind_case() == Value::kListValue) {
    for (int i = 0; i < value.list_value().values_size(); ++i) {
      for (std::string& e :
           SchemaErrors(value.list_value().values(i), *items, document, absl::StrCat(path, "[", i, "]"))) {
        errors.push_back(std::move(e));
      }
    }
  }
  return errors;
}

}  // namespace gradsync::testing
