// The REST API's OpenAPI 3 description, served at GET /v1/openapi.json: the routes, parameters and
// answers written in openapi_paths.json (compiled in), and the schemas of every gradsync.v1 message
// they name, written from the protos' descriptors (proto_json_schema.h).
#pragma once

#include <string>

namespace gradsync::coordinator {

// The description as JSON text, built on the first call; thread-safe.
const std::string& OpenApiDocument();

}  // namespace gradsync::coordinator
