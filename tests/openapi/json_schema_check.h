// Checks a JSON value against a schema of an OpenAPI 3.0 document: the subset gradsync's
// description uses ($ref into the document, type, properties, required, additionalProperties
// false or a schema, items, enum, pattern, minimum, maximum). Strict where the description is
// silent in one way only: a property it does not list fails when additionalProperties is false.
#pragma once

#include <string>
#include <vector>

#include "google/protobuf/struct.pb.h"

namespace gradsync::testing {

// Every way `value` breaks `schema`, each naming the JSON path ("$.progress.step: ..."); empty
// when it conforms. `document` is the whole description, where $refs point.
std::vector<std::string> SchemaErrors(const google::protobuf::Value& value, const google::protobuf::Value& schema,
                                      const google::protobuf::Struct& document, const std::string& path = "$");

// The value a local $ref ("#/components/schemas/Job") points at; a null kind when none.
google::protobuf::Value Resolve(const google::protobuf::Struct& document, const std::string& ref);

}  // namespace gradsync::testing
