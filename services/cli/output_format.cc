#include "output_format.h"

#include <algorithm>
#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "command_table.h"
#include "yaml-cpp/yaml.h"

namespace gradsync::cli {
namespace {

// Plain scalars YAML 1.1 or 1.2 reads as booleans or null.
constexpr std::array<absl::string_view, 26> kReservedWords = {
    "y",     "Y",     "yes",   "Yes", "YES", "n",  "N",   "no",  "No",  "NO",   "true", "True", "TRUE",
    "false", "False", "FALSE", "on",  "On",  "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~"};

// Whether a YAML reader could take the plain scalar `s` for something other than a string: a
// reserved word, or anything that starts like a number, a date or .inf/.nan. Such strings are
// written quoted; quoting a few more than needed costs nothing.
bool ReadsAsAnotherType(absl::string_view s) {
  if (s.empty()) return true;
  if (std::find(kReservedWords.begin(), kReservedWords.end(), s) != kReservedWords.end()) return true;
  if (absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) return true;
  if ((s[0] == '-' || s[0] == '+' || s[0] == '.') && s.size() > 1) {
    const char c = s[1];
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'i' || c == 'I' || c == 'n' ||
           c == 'N';
  }
  return false;
}

// A JSON number as every YAML reader takes it for a float or an integer: YAML 1.1 readers (PyYAML)
// want a '.' and a signed exponent in a float, so "1e-05" becomes "1.0e-05".
std::string YamlNumber(std::string number) {
  const size_t e = number.find_first_of("eE");
  const bool numeric =
      !number.empty() && (number[0] == '-' || absl::ascii_isdigit(static_cast<unsigned char>(number[0])));
  if (!numeric || e == std::string::npos) return number;
  if (number.find('.') == std::string::npos) number.insert(e, ".0");
  const size_t sign = number.find_first_of("eE") + 1;
  if (sign < number.size() && number[sign] != '-' && number[sign] != '+') number.insert(sign, "+");
  return number;
}

void EmitString(YAML::Emitter& out, const std::string& s) {
  if (ReadsAsAnotherType(s)) out << YAML::DoubleQuoted;
  out << s;
}

// What the schema says of a value: the message type it is (nullptr: none known), and whether it is
// a 64-bit integer, which protobuf's JSON writes as a string.
struct Schema {
  const google::protobuf::Descriptor* message = nullptr;
  bool int64 = false;
};

// The schema of the value under `key` of an object whose schema is `parent`.
Schema SchemaOf(const Schema& parent, const std::string& key) {
  if (parent.message == nullptr) return {};
  const google::protobuf::FieldDescriptor* f = nullptr;
  for (int i = 0; i < parent.message->field_count() && f == nullptr; ++i) {
    const google::protobuf::FieldDescriptor* field = parent.message->field(i);
    if (field->json_name() == key || field->name() == key) f = field;
  }
  // A Kubernetes List of such messages ({"items": [...]}).
  if (f == nullptr) return key == "items" ? parent : Schema{};
  if (f->is_map()) return {};
  using Cpp = google::protobuf::FieldDescriptor::CppType;
  const bool int64 = f->cpp_type() == Cpp::CPPTYPE_INT64 || f->cpp_type() == Cpp::CPPTYPE_UINT64;
  return {f->message_type(), int64};
}

// Whether `s` is an integer a YAML reader takes as one (protobuf writes 64-bit integers so).
bool IsIntegerText(const std::string& s) {
  const size_t digits = !s.empty() && s[0] == '-' ? 1 : 0;
  return s.size() > digits && std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits), s.end(),
                                          [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
}

void Emit(YAML::Emitter& out, const YAML::Node& node, const Schema& schema) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        out << YAML::Key;
        EmitString(out, entry.first.Scalar());
        out << YAML::Value;
        Emit(out, entry.second, SchemaOf(schema, entry.first.Scalar()));
      }
      out << YAML::EndMap;
      return;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node) Emit(out, item, schema);
      out << YAML::EndSeq;
      return;
    case YAML::NodeType::Scalar:
      // A quoted JSON scalar is a string ("!"); a plain one a number, true or false ("?").
      if (node.Tag() == "!" && schema.int64 && IsIntegerText(node.Scalar())) {
        out << node.Scalar();
      } else if (node.Tag() == "!") {
        EmitString(out, node.Scalar());
      } else {
        out << YamlNumber(node.Scalar());
      }
      return;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: out << YAML::Null; return;
  }
}

}  // namespace

absl::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable: return "table";
    case OutputFormat::kWide: return "wide";
    case OutputFormat::kJson: return "json";
    case OutputFormat::kYaml: return "yaml";
    case OutputFormat::kName: return "name";
  }
  return "table";
}

std::string DescribeFormats(const std::vector<OutputFormat>& formats) {
  std::string out;
  for (size_t i = 0; i < formats.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : (i + 1 == formats.size() ? " or " : ", "), OutputFormatName(formats[i]));
  }
  return out;
}

absl::StatusOr<OutputFormat> ParseOutputFormat(const std::string& command, const Args& args,
                                               const std::vector<OutputFormat>& accepted) {
  if (accepted.empty()) return absl::InternalError(absl::StrCat("gradsync ", command, " prints no formats"));
  if (!args.Has("output")) return accepted.front();
  std::string name = args.Get("output");
  if (name == "text") name = "table";
  for (OutputFormat f : accepted) {
    if (OutputFormatName(f) == name) return f;
  }
  return absl::InvalidArgumentError(absl::StrCat("gradsync ", command, ": -o: expected ", DescribeFormats(accepted),
                                                 ", got \"", args.Get("output"), "\""));
}

absl::StatusOr<OutputFormat> OutputFormatOf(const std::string& command, const Args& args) {
  const Command* c = FindCommand(command);
  if (c == nullptr) return absl::InternalError(absl::StrCat("no command \"", command, "\" in the command table"));
  return ParseOutputFormat(command, args, c->formats);
}

absl::StatusOr<std::string> JsonToYaml(absl::string_view json, const google::protobuf::Descriptor* schema) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(json));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not JSON: ", e.what()));
  }
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetNullFormat(YAML::LowerNull);
  Emit(out, root, Schema{schema, false});
  if (!out.good()) return absl::InternalError(absl::StrCat("cannot write YAML: ", out.GetLastError()));
  return absl::StrCat(out.c_str(), "\n");
}

std::string InFormat(const std::string& json, OutputFormat format, const google::protobuf::Descriptor* schema) {
  if (format == OutputFormat::kYaml) {
    absl::StatusOr<std::string> yaml = JsonToYaml(json, schema);
    if (yaml.ok()) return *yaml;
  }
  return json.empty() || json.back() != '\n' ? json + "\n" : json;
}

std::string JsonItems(const std::vector<std::string>& items) {
  if (items.empty()) return "{\n  \"items\": []\n}\n";
  std::string out = "{\n  \"items\": [\n";
  for (size_t i = 0; i < items.size(); ++i) {
    absl::string_view item = items[i];
    while (!item.empty() && item.back() == '\n') item.remove_suffix(1);
    for (absl::string_view line : absl::StrSplit(item, '\n')) absl::StrAppend(&out, "    ", line, "\n");
    out.insert(out.size() - 1, i + 1 < items.size() ? "," : "");
  }
  absl::StrAppend(&out, "  ]\n}\n");
  return out;
}

}  // namespace gradsync::cli
