# Script mode (cmake -P) of gradsync_embed_text: writes OUTPUT, a C++ file that defines SYMBOL as
# the text of SOURCE.
file(READ "${SOURCE}" text)
string(FIND "${text}" ")gradsync\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${SOURCE} contains the raw-string delimiter )gradsync\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${SOURCE} by cmake/embed_text.cmake.\n"
  "namespace gradsync::embedded {\n"
  "extern const char* const ${SYMBOL};\n"
  "const char* const ${SYMBOL} = R\"gradsync(${text})gradsync\";\n"
  "}  // namespace gradsync::embedded\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
