#include "data_file.h"

#include "gradsync/core/bounded_file.h"

namespace gradsync::data {

absl::StatusOr<std::string> ReadDataFile(const std::string& path, int64_t max_bytes) {
  return ReadBoundedFile(path, max_bytes, "a data file");
}

}  // namespace gradsync::data
