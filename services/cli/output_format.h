// -o / --output for the commands that print data, as kubectl reads it: table (the default), wide
// (a table with more columns), json, yaml (the JSON output as block-style YAML: the same data) or
// name (resource names, "jobs/<id>", one per line). Which formats a command accepts is part of its
// entry in the command table (command_table.h).
#pragma once

#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "gradsync/core/args.h"

namespace gradsync::cli {

enum class OutputFormat { kTable, kWide, kJson, kYaml, kName };

// "table", "wide", "json", "yaml", "name".
absl::string_view OutputFormatName(OutputFormat format);

// "table, json or yaml".
std::string DescribeFormats(const std::vector<OutputFormat>& formats);

// The format that -o/--output ("output" in `args`) names, `accepted.front()` when none is given;
// "text" reads as "table". INVALID_ARGUMENT `gradsync COMMAND: -o: expected table, json or yaml,
// got "bogus"` for anything else `accepted` lacks.
absl::StatusOr<OutputFormat> ParseOutputFormat(const std::string& command, const Args& args,
                                               const std::vector<OutputFormat>& accepted);

// The same with the formats the command table lists for `command` ("list", "checkpoint save").
absl::StatusOr<OutputFormat> OutputFormatOf(const std::string& command, const Args& args);

// JSON text as block-style YAML holding the same data: objects keep their key order, strings stay
// strings (quoted where YAML would read them as another type: "42", "true", "2026-01-01", ""),
// numbers, booleans and null stay what they are. With `schema`, the message type `json` is the
// protobuf JSON of (or a list of, {"items": [...]}): its 64-bit integer fields, which protobuf's
// JSON writes as strings ("maxSteps": "4000"), are YAML integers (maxSteps: 4000), as kubectl
// prints them. INVALID_ARGUMENT when `json` does not parse.
absl::StatusOr<std::string> JsonToYaml(absl::string_view json, const google::protobuf::Descriptor* schema = nullptr);

// `json` printed in `format`: kYaml converted by JsonToYaml (with `schema`), anything else as
// given (so is JSON that does not parse, which no command prints); ends with a newline.
std::string InFormat(const std::string& json, OutputFormat format,
                     const google::protobuf::Descriptor* schema = nullptr);

// Kubernetes' List shape, {"items": [...]}, around JSON objects (each as printed alone).
std::string JsonItems(const std::vector<std::string>& items);

}  // namespace gradsync::cli
