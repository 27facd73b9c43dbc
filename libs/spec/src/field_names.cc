#include "field_names.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gradsync::spec::internal {
namespace {

// Case-insensitive Levenshtein distance; names are short, so the quadratic table is fine.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same =
          std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

}  // namespace

const google::protobuf::FieldDescriptor* FindField(const google::protobuf::Descriptor& descriptor,
                                                   absl::string_view key) {
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor.field(i);
    if (field->json_name() == key || field->name() == key) return field;
  }
  return nullptr;
}

std::string SuggestField(const google::protobuf::Descriptor& descriptor, absl::string_view key) {
  // A suggestion further than this from what was typed is more confusing than helpful.
  const size_t max_distance = std::min<size_t>(2, std::max<size_t>(1, key.size() / 3));
  const google::protobuf::FieldDescriptor* best = nullptr;
  size_t best_distance = max_distance + 1;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor.field(i);
    const size_t distance = std::min(EditDistance(key, field->json_name()), EditDistance(key, field->name()));
    if (distance < best_distance) {
      best = field;
      best_distance = distance;
    }
  }
  if (best == nullptr) return "";
  return absl::StrCat("; did you mean ", best->json_name(), "?");
}

std::string JoinPath(absl::string_view parent, absl::string_view name) {
  if (parent.empty()) return std::string(name);
  return absl::StrCat(parent, ".", name);
}

}  // namespace gradsync::spec::internal
