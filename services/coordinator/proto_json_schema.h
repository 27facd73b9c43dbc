// JSON Schemas (the OpenAPI 3.0 dialect) of protobuf messages as protobuf's JSON mapping prints and
// parses them, written from the messages' descriptors so that the REST API's description cannot
// drift from the protos: lowerCamelCase field names, 64-bit integers as decimal strings, enums by
// name, bytes in base64, Timestamp as RFC 3339, Duration as "1.5s", Struct as any object, Value
// as any value.
#pragma once

#include "google/protobuf/descriptor.h"
#include "google/protobuf/struct.pb.h"

namespace gradsync::coordinator {

// The component name of `message`'s schema: its full name, "gradsync.v1.Job".
std::string SchemaName(const google::protobuf::Descriptor& message);

// Adds the schema of `message` and of every message it refers to (not yet in `schemas`) to
// `schemas`, a components.schemas object, keyed by SchemaName. Each is an object with
// additionalProperties false; a message refers to another through "#/components/schemas/<name>".
void AddMessageSchemas(const google::protobuf::Descriptor& message, google::protobuf::Struct* schemas);

}  // namespace gradsync::coordinator
