#include "proto_json_schema.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace gradsync::coordinator {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Struct;
using google::protobuf::Value;

void Set(Struct* s, const std::string& key, const std::string& text) {
  (*s->mutable_fields())[key].set_string_value(text);
}

Value Typed(const std::string& type, const std::string& format = "") {
  Value v;
  Set(v.mutable_struct_value(), "type", type);
  if (!format.empty()) Set(v.mutable_struct_value(), "format", format);
  return v;
}

// The schemas of the well-known types the JSON mapping prints specially; a null kind for others.
Value WellKnown(const Descriptor& m) {
  const std::string& name = m.full_name();
  if (name == "google.protobuf.Timestamp") return Typed("string", "date-time");
  if (name == "google.protobuf.Duration") {
    Value v = Typed("string");
    Set(v.mutable_struct_value(), "pattern", "^-?[0-9]+(\\.[0-9]+)?s$");
    return v;
  }
  if (name == "google.protobuf.Struct") return Typed("object");
  if (name == "google.protobuf.Value") {
    Value any;
    any.mutable_struct_value();
    return any;
  }
  return Value();
}

Value Ref(const Descriptor& m) {
  Value v;
  Set(v.mutable_struct_value(), "$ref", absl::StrCat("#/components/schemas/", SchemaName(m)));
  return v;
}

// One value of `field` (an element when it is repeated).
Value ElementSchema(const FieldDescriptor& field, Struct* schemas) {
  switch (field.type()) {
    case FieldDescriptor::TYPE_DOUBLE: return Typed("number", "double");
    case FieldDescriptor::TYPE_FLOAT: return Typed("number", "float");
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_SINT64:
    case FieldDescriptor::TYPE_SFIXED64:
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED64: {
      const bool is_unsigned =
          field.type() == FieldDescriptor::TYPE_UINT64 || field.type() == FieldDescriptor::TYPE_FIXED64;
      Value v = Typed("string", is_unsigned ? "uint64" : "int64");
      Set(v.mutable_struct_value(), "pattern", is_unsigned ? "^[0-9]+$" : "^-?[0-9]+$");
      return v;
    }
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_FIXED32: {
      Value v = Typed("integer", "int64");
      (*v.mutable_struct_value()->mutable_fields())["minimum"].set_number_value(0);
      return v;
    }
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SFIXED32: return Typed("integer", "int32");
    case FieldDescriptor::TYPE_BOOL: return Typed("boolean");
    case FieldDescriptor::TYPE_STRING: return Typed("string");
    case FieldDescriptor::TYPE_BYTES: return Typed("string", "byte");
    case FieldDescriptor::TYPE_ENUM: {
      Value v = Typed("string");
      auto* names = (*v.mutable_struct_value()->mutable_fields())["enum"].mutable_list_value();
      const auto* e = field.enum_type();
      for (int i = 0; i < e->value_count(); ++i) names->add_values()->set_string_value(e->value(i)->name());
      return v;
    }
    case FieldDescriptor::TYPE_MESSAGE:
    case FieldDescriptor::TYPE_GROUP: {
      const Descriptor& m = *field.message_type();
      if (Value known = WellKnown(m); known.kind_case() != Value::KIND_NOT_SET) return known;
      AddMessageSchemas(m, schemas);
      return Ref(m);
    }
  }
  return Value();
}

Value FieldSchema(const FieldDescriptor& field, Struct* schemas) {
  if (field.is_map()) {
    Value v = Typed("object");
    const FieldDescriptor& mapped = *field.message_type()->map_value();
    *(*v.mutable_struct_value()->mutable_fields())["additionalProperties"].mutable_struct_value() =
        ElementSchema(mapped, schemas).struct_value();
    return v;
  }
  Value element = ElementSchema(field, schemas);
  if (!field.is_repeated()) return element;
  Value v = Typed("array");
  (*v.mutable_struct_value()->mutable_fields())["items"] = std::move(element);
  return v;
}

}  // namespace

std::string SchemaName(const Descriptor& message) { return message.full_name(); }

void AddMessageSchemas(const Descriptor& message, Struct* schemas) {
  const std::string name = SchemaName(message);
  if (schemas->fields().count(name) > 0) return;
  // Present before its fields are walked, so that a message that refers to itself ends the walk.
  Struct& schema = *(*schemas->mutable_fields())[name].mutable_struct_value();
  Set(&schema, "type", "object");
  (*schema.mutable_fields())["additionalProperties"].set_bool_value(false);
  Struct properties;
  for (int i = 0; i < message.field_count(); ++i) {
    const FieldDescriptor& field = *message.field(i);
    (*properties.mutable_fields())[field.json_name()] = FieldSchema(field, schemas);
  }
  // `schema` may have moved while the fields' messages were added: find it again.
  *(*(*schemas->mutable_fields())[name].mutable_struct_value()->mutable_fields())["properties"].mutable_struct_value() =
      std::move(properties);
}

}  // namespace gradsync::coordinator
