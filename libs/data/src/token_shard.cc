#include "gradsync/data/token_shard.h"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "data_file.h"

namespace gradsync::data {

namespace {

constexpr size_t kHeaderBytes = kShardHeaderInts * sizeof(int32_t);

// The layout a header's magic names, or nullptr.
const ShardFormat* FormatOfMagic(int32_t magic) {
  for (const ShardFormat* f : {&kUint16Shard, &kUint32Shard}) {
    if (f->magic == magic) return f;
  }
  return nullptr;
}

template <class T>
absl::StatusOr<TokenStream> CopyTokens(const std::string& path, const std::string& bytes, int64_t count,
                                       int vocab_size) {
  std::vector<T> tokens(static_cast<size_t>(count));
  std::memcpy(tokens.data(), bytes.data() + kHeaderBytes, tokens.size() * sizeof(T));
  for (const T t : tokens) {
    if (static_cast<int64_t>(t) >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": holds a token outside the vocabulary of ", vocab_size));
    }
  }
  return TokenStream(std::move(tokens));
}

template <class T>
absl::Status WriteShardAs(const std::string& path, const ShardFormat& format, std::span<const T> tokens) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", tokens.size(), " tokens do not fit a shard's count"));
  }
  std::vector<int32_t> header(kShardHeaderInts, 0);
  header[0] = format.magic;
  header[1] = format.version;
  header[2] = static_cast<int32_t>(tokens.size());
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  auto write_all = [fd](const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  };
  const bool ok = write_all(header.data(), header.size() * sizeof(int32_t)) &&
                  write_all(tokens.data(), tokens.size_bytes()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

// Shard errors say what is wrong and never quote what the file holds (its header fields, its size,
// a token): a spec may name any file the worker can read, and the error goes back to its author.
absl::StatusOr<TokenStream> ReadShard(const std::string& path, int vocab_size) {
  auto bytes = ReadDataFile(path, kMaxDataFileBytes);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() < kHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": shorter than a shard's header of ", kHeaderBytes, " bytes"));
  }
  int32_t header[3];
  std::memcpy(header, bytes->data(), sizeof(header));
  const ShardFormat* format = FormatOfMagic(header[0]);
  if (format == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a token shard (its header lacks the magic number ",
                                                   kUint16Shard.magic, " or ", kUint32Shard.magic, ")"));
  }
  if (header[1] != format->version) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported shard version (magic ", format->magic,
                                                   " goes with version ", format->version, ")"));
  }
  const int64_t count = header[2];
  const int64_t width = format->width == TokenWidth::kUint16 ? 2 : 4;
  const int64_t body = static_cast<int64_t>(bytes->size() - kHeaderBytes);
  if (count <= 0) return absl::InvalidArgumentError(absl::StrCat(path, ": shard holds no tokens"));
  if (body < count * width) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": truncated: the file holds fewer tokens than its header announces"));
  }
  if (body > count * width) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": bytes follow the tokens the header announces"));
  }
  if (format->width == TokenWidth::kUint16) return CopyTokens<uint16_t>(path, *bytes, count, vocab_size);
  return CopyTokens<uint32_t>(path, *bytes, count, vocab_size);
}

absl::Status WriteShard(const std::string& path, std::span<const uint16_t> tokens) {
  return WriteShardAs(path, kUint16Shard, tokens);
}

absl::Status WriteShard(const std::string& path, std::span<const uint32_t> tokens) {
  return WriteShardAs(path, kUint32Shard, tokens);
}

absl::StatusOr<std::vector<ShardFile>> WriteShards(const std::string& dir, const std::string& prefix,
                                                   const TokenStream& tokens, int64_t shard_tokens) {
  if (shard_tokens <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("shard size must be positive, got ", shard_tokens));
  }
  if (tokens.size() == 0) return absl::InvalidArgumentError(absl::StrCat("no tokens for the ", prefix, " shards"));
  // Equal sizes (within one token) rather than full shards and a remainder: a short last shard
  // could hold less than one training window, and TokenDataset refuses such a file.
  const auto total = static_cast<size_t>(tokens.size());
  const size_t count = (total + static_cast<size_t>(shard_tokens) - 1) / static_cast<size_t>(shard_tokens);
  std::vector<ShardFile> written;
  size_t start = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t n = total / count + (i < total % count ? 1 : 0);
    ShardFile file{absl::StrCat(dir, "/", prefix, "_", absl::Dec(i, absl::kZeroPad6), ".bin"), static_cast<int64_t>(n)};
    const absl::Status s =
        tokens.Visit([&](const auto& v) { return WriteShard(file.path, std::span(v).subspan(start, n)); });
    if (!s.ok()) return s;
    written.push_back(std::move(file));
    start += n;
  }
  return written;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  auto bytes = ReadDataFile(path, kMaxDataFileBytes);
  if (!bytes.ok()) return bytes.status();
  if (bytes->empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty file"));
  return bytes;
}

absl::StatusOr<TokenStream> ReadTextTokens(const std::string& path) {
  auto bytes = ReadTextFile(path);
  if (!bytes.ok()) return bytes.status();
  std::vector<uint16_t> tokens(bytes->size());
  for (size_t i = 0; i < bytes->size(); ++i) tokens[i] = static_cast<unsigned char>((*bytes)[i]);
  return TokenStream(std::move(tokens));
}

namespace {

// The directory glob(3) could not read last on this thread (its error function has no argument for
// the caller's state).
thread_local std::string unreadable_dir;
thread_local int unreadable_error = 0;

int NoteUnreadableDir(const char* path, int error) {
  unreadable_dir = path;
  unreadable_error = error;
  return 1;  // stop: GLOB_ERR
}

// `dir` as an absolute path: a relative pattern is read from this process's directory, which the
// user may not know (a worker's, a coordinator's).
std::string AbsoluteDir(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(dir.empty() ? "." : dir, ec);
  return ec ? dir : abs.string();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& pattern : patterns) {
    glob_t g{};
    unreadable_dir.clear();
    unreadable_error = 0;
    const int rc = ::glob(pattern.c_str(), GLOB_ERR, NoteUnreadableDir, &g);
    if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
      ::globfree(&g);
      return absl::InvalidArgumentError(absl::StrCat("\"", pattern, "\" matches no file"));
    }
    if (rc != 0) {
      ::globfree(&g);
      const int error = unreadable_error != 0 ? unreadable_error : errno;
      return absl::InvalidArgumentError(absl::StrCat("\"", pattern, "\": cannot list the directory ",
                                                     AbsoluteDir(unreadable_dir), ": ", std::strerror(error)));
    }
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return out;
}

}  // namespace gradsync::data
