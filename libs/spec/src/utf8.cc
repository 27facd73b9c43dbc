#include "utf8.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace gradsync::spec::internal {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// How a sequence starts: its continuation bytes, the smallest code point its length may encode
// (smaller ones are overlong), and the lead byte's payload bits.
struct Lead {
  int continuation;
  uint32_t min;
  uint32_t bits;
};

std::optional<Lead> LeadOf(unsigned char byte) {
  if (byte < 0x80) return Lead{0, 0, byte};
  if ((byte & 0xE0) == 0xC0) return Lead{1, 0x80, byte & 0x1Fu};
  if ((byte & 0xF0) == 0xE0) return Lead{2, 0x800, byte & 0x0Fu};
  if ((byte & 0xF8) == 0xF0) return Lead{3, 0x10000, byte & 0x07u};
  return std::nullopt;  // a continuation byte, or 0xF8 and above
}

std::string Join(const std::string& prefix, const FieldDescriptor* field) {
  return prefix.empty() ? field->json_name() : absl::StrCat(prefix, ".", field->json_name());
}

std::optional<BadString> CheckString(const std::string& value, const std::string& path) {
  if (!IsValidUtf8(value)) return BadString{path, "must be valid UTF-8", "bytes that are not"};
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

size_t ValidUtf8Prefix(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const std::optional<Lead> lead = LeadOf(static_cast<unsigned char>(text[i]));
    if (!lead.has_value() || i + lead->continuation >= text.size() + (lead->continuation == 0)) return i;
    uint32_t value = lead->bits;
    for (int k = 1; k <= lead->continuation; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      if ((byte & 0xC0) != 0x80) return i;
      value = (value << 6) | (byte & 0x3Fu);
    }
    if (value < lead->min || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return i;
    i += lead->continuation + 1;
  }
  return text.size();
}

bool IsValidUtf8(absl::string_view text) { return ValidUtf8Prefix(text) == text.size(); }

std::optional<BadString> FirstBadString(const google::protobuf::Message& message) { return FirstBad(message, ""); }

}  // namespace gradsync::spec::internal
