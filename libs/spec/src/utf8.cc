#include "utf8.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "gradsync/core/utf8.h"

namespace gradsync::spec::internal {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::string Join(const std::string& prefix, const FieldDescriptor* field) {
  return prefix.empty() ? field->json_name() : absl::StrCat(prefix, ".", field->json_name());
}

std::optional<BadString> CheckString(const std::string& value, const std::string& path) {
  if (!utf8::IsValid(value)) return BadString{path, "must be valid UTF-8", "bytes that are not"};
  if (value.size() > kMaxStringBytes) {
    return BadString{path, absl::StrCat("must be at most ", kMaxStringBytes, " bytes"),
                     absl::StrCat(value.size(), " bytes")};
  }
  return std::nullopt;
}

std::optional<BadString> FirstBad(const Message& message, const std::string& prefix) {
  const auto* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string path = Join(prefix, field);
    const bool repeated = field->is_repeated();
    const int n = repeated ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string at = repeated ? absl::StrCat(path, "[", i, "]") : path;
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        const std::string value =
            repeated ? reflection->GetRepeatedString(message, field, i) : reflection->GetString(message, field);
        if (std::optional<BadString> bad = CheckString(value, at)) return bad;
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const Message& child =
            repeated ? reflection->GetRepeatedMessage(message, field, i) : reflection->GetMessage(message, field);
        if (std::optional<BadString> bad = FirstBad(child, at)) return bad;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<BadString> FirstBadString(const google::protobuf::Message& message) { return FirstBad(message, ""); }

}  // namespace gradsync::spec::internal
