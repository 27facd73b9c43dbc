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
#include "data_writer.h"
#include "gradsync/data/shard_reader.h"

namespace gradsync::data {

namespace {

constexpr size_t kHeaderBytes = kShardHeaderInts * sizeof(int32_t);

template <class T>
absl::Status WriteShardAs(const std::string& path, const ShardFormat& format, std::span<const T> tokens) {
  if (tokens.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", tokens.size(), " tokens do not fit a shard's count"));
  }
  std::vector<int32_t> header(kShardHeaderInts, 0);
  header[0] = format.magic;
  header[1] = format.version;
  header[2] = static_cast<int32_t>(tokens.size());
  return internal::WriteDataFile(
      path, {std::string_view(reinterpret_cast<const char*>(header.data()), header.size() * sizeof(int32_t)),
             std::string_view(reinterpret_cast<const char*>(tokens.data()), tokens.size_bytes())});
}

}  // namespace

// Shard errors say what is wrong and never quote what the file holds (its header fields, its size,
// a token): a spec may name any file the worker can read, and the error goes back to its author.
// ShardReader checks the header and size; this reads every token, so it bounds the file first.
absl::StatusOr<TokenStream> ReadShard(const std::string& path, int vocab_size) {
  absl::StatusOr<ShardReader> reader = ShardReader::Open(path, vocab_size);
  if (!reader.ok()) return reader.status();
  const int64_t token_bytes = reader->width() == TokenWidth::kUint16 ? 2 : 4;
  if (static_cast<int64_t>(kHeaderBytes) + reader->size() * token_bytes > kMaxDataFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is larger than a data file may be (",
                                                   kMaxDataFileBytes >> 20, " MiB)"));
  }
  std::vector<int32_t> tokens(static_cast<size_t>(reader->size()));
  if (absl::Status s = reader->Read(0, reader->size(), tokens.data()); !s.ok()) return s;
  return TokenStream::OfWidth(std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(tokens.data()), tokens.size()),
                              reader->width());
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
