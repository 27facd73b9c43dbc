#include "gradsync/ckpt/checksum.h"

#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gradsync/core/digest.h"

namespace gradsync::ckpt {
namespace {

constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;

}  // namespace

const char* ChecksumName(ChecksumAlgorithm algorithm) {
  return algorithm == ChecksumAlgorithm::kXxh3_64 ? "xxh3-64" : "fnv1a64";
}

std::string FormatDigest(ChecksumAlgorithm algorithm, uint64_t value) {
  return absl::StrFormat("%s:%016x", ChecksumName(algorithm), value);
}

absl::StatusOr<ChecksumAlgorithm> DigestAlgorithm(const std::string& digest, const std::string& file) {
  const size_t colon = digest.find(':');
  if (colon == std::string::npos) {
    return absl::DataLossError(
        absl::StrCat(file, ": checksum \"", digest, "\" names no algorithm (expected \"xxh3-64:\" or \"fnv1a64:\")"));
  }
  const std::string prefix = digest.substr(0, colon);
  for (ChecksumAlgorithm a : {ChecksumAlgorithm::kXxh3_64, ChecksumAlgorithm::kFnv1a64}) {
    if (prefix == ChecksumName(a)) return a;
  }
  return absl::DataLossError(
      absl::StrCat(file, ": checksum algorithm \"", prefix, "\" is unknown (this build verifies xxh3-64 and fnv1a64)"));
}

StreamingChecksum::StreamingChecksum(ChecksumAlgorithm algorithm) : algorithm_(algorithm), fnv_(kFnvOffsetBasis) {
  if (algorithm_ != ChecksumAlgorithm::kXxh3_64) return;
  xxh3_ = XXH3_createState();
  if (xxh3_ == nullptr) throw std::bad_alloc();
  XXH3_64bits_reset(xxh3_);  // cannot fail on a state just created
}

StreamingChecksum::StreamingChecksum(StreamingChecksum&& other) noexcept
    : algorithm_(other.algorithm_), fnv_(other.fnv_), xxh3_(std::exchange(other.xxh3_, nullptr)) {}

StreamingChecksum& StreamingChecksum::operator=(StreamingChecksum&& other) noexcept {
  if (this != &other) {
    if (xxh3_ != nullptr) XXH3_freeState(xxh3_);
    algorithm_ = other.algorithm_;
    fnv_ = other.fnv_;
    xxh3_ = std::exchange(other.xxh3_, nullptr);
  }
  return *this;
}

StreamingChecksum::~StreamingChecksum() {
  if (xxh3_ != nullptr) XXH3_freeState(xxh3_);
}

void StreamingChecksum::Update(std::span<const std::byte> bytes) {
  if (xxh3_ != nullptr) {
    XXH3_64bits_update(xxh3_, bytes.data(), bytes.size());
  } else {
    fnv_ = Fnv1a64(bytes, fnv_);
  }
}

uint64_t StreamingChecksum::Value() const { return xxh3_ != nullptr ? XXH3_64bits_digest(xxh3_) : fnv_; }

absl::StatusOr<FileDigest> DigestFile(const std::string& path, ChecksumAlgorithm algorithm, Links links) {
  absl::StatusOr<int> fd = OpenRegularFile(path, links);
  if (!fd.ok()) return fd.status();
  std::vector<char> buf(1 << 20);
  StreamingChecksum sum(algorithm);
  FileDigest out;
  absl::Status s;
  for (;;) {
    const ssize_t n = ::read(*fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) s = absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    if (n <= 0) break;
    sum.Update(std::as_bytes(std::span(buf.data(), static_cast<size_t>(n))));
    out.bytes += n;
  }
  ::close(*fd);
  if (!s.ok()) return s;
  out.digest = sum.Digest();
  return out;
}

}  // namespace gradsync::ckpt
