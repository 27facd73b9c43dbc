// Prints the coordinator's OpenAPI description, as GET /v1/openapi.json serves it, for the linter.
#include <cstdio>

#include "openapi.h"

int main() {
  std::fputs(gradsync::coordinator::OpenApiDocument().c_str(), stdout);
  return 0;
}
