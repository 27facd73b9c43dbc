#include "gradsync/data/shard_reader.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gradsync/data/token_shard.h"
#include "read_only_file.h"

namespace gradsync::data {

namespace {

constexpr int64_t kHeaderBytes = kShardHeaderInts * sizeof(int32_t);

absl::Status CheckHeader(const std::string& path, const internal::ReadOnlyFile& file, int64_t file_bytes, int64_t* count, TokenWidth* width) {
  if (file_bytes < kHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": shorter than a shard's header of ", kHeaderBytes, " bytes"));
  }
  int32_t header[3];
  if (!file.ReadAt(header, sizeof(header), 0)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read its header: ", std::strerror(errno)));
  }
  const ShardFormat* format = nullptr;
  for (const ShardFormat* f : {&kUint16Shard, &kUint32Shard}) {
    if (f->magic == header[0]) format = f;
  }
  if (format == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a token shard (its header lacks the magic number ",
                                                   kUint16Shard.magic, " or ", kUint32Shard.magic, ")"));
  }
  if (header[1] != format->version) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported shard version (magic ", format->magic,
                                                   " goes with version ", format->version, ")"));
  }
  *count = header[2];
  *width = format->width;
  const int64_t token_bytes = format->width == TokenWidth::kUint16 ? 2 : 4;
  if (*count <= 0) return absl::InvalidArgumentError(absl::StrCat(path, ": shard holds no tokens"));
  const int64_t body = file_bytes - kHeaderBytes;
  if (body < *count * token_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": truncated: the file holds fewer tokens than its header announces"));
  }
  if (body > *count * token_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": bytes follow the tokens the header announces"));
  }
  return absl::OkStatus();
}

template <class T>
absl::Status ReadTokens(const ShardReader& reader, const internal::ReadOnlyFile& file, int vocab_size, int64_t first,
                        int64_t count, int32_t* out) {
  // Through a buffer of the stored width: one window's tokens at a time.
  std::vector<T> buffer(static_cast<size_t>(count));
  if (!file.ReadAt(buffer.data(), buffer.size() * sizeof(T), kHeaderBytes + first * static_cast<int64_t>(sizeof(T)))) {
    return absl::DataLossError(absl::StrCat(reader.path(), ": cannot read tokens ", first, "..", first + count,
                                            " (was the file cut or replaced while training?)"));
  }
  for (size_t i = 0; i < buffer.size(); ++i) {
    if (static_cast<int64_t>(buffer[i]) >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(reader.path(), ": holds a token outside the vocabulary of ", vocab_size));
    }
    out[i] = static_cast<int32_t>(buffer[i]);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ShardReader> ShardReader::Open(const std::string& path, int vocab_size) {
  int64_t bytes = 0;
  absl::StatusOr<std::shared_ptr<const internal::ReadOnlyFile>> file = internal::ReadOnlyFile::Open(path, &bytes);
  if (!file.ok()) return file.status();
  ShardReader reader;
  reader.path_ = path;
  reader.file_ = *std::move(file);
  reader.vocab_size_ = vocab_size;
  if (absl::Status s = CheckHeader(path, *reader.file_, bytes, &reader.count_, &reader.width_); !s.ok()) return s;
  return reader;
}

absl::Status ShardReader::Read(int64_t first, int64_t count, int32_t* out) const {
  if (first < 0 || count < 0 || first + count > count_) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": tokens ", first, "..", first + count, " are outside its ",
                                              count_));
  }
  if (width_ == TokenWidth::kUint16) return ReadTokens<uint16_t>(*this, *file_, vocab_size_, first, count, out);
  return ReadTokens<uint32_t>(*this, *file_, vocab_size_, first, count, out);
}

}  // namespace gradsync::data
