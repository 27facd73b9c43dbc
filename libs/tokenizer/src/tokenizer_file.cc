#include "tokenizer_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace gradsync::tokenizer {

absl::StatusOr<std::string> ReadTokenizerFile(const std::string& path) {
  // O_NONBLOCK: opening a fifo must not wait for a writer (the type check then refuses it).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  absl::Cleanup close_fd = [fd] { ::close(fd); };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return absl::InternalError(absl::StrCat(path, ": cannot stat: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError(absl::StrCat(path, ": is not a regular file"));
  if (st.st_size > kMaxTokenizerFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is larger than a tokenizer file may be (", kMaxTokenizerFileBytes >> 20, " MiB)"));
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
    if (n == 0) return bytes;
    if (static_cast<int64_t>(bytes.size()) + n > kMaxTokenizerFileBytes) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": grew beyond what a tokenizer file may be"));
    }
    bytes.append(chunk, static_cast<size_t>(n));
  }
}

absl::StatusOr<google::protobuf::Value> ReadJsonFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadTokenizerFile(path);
  if (!text.ok()) return text.status();
  google::protobuf::Value value;
  if (!google::protobuf::util::JsonStringToMessage(*text, &value).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is not valid JSON"));
  }
  return value;
}

}  // namespace gradsync::tokenizer
