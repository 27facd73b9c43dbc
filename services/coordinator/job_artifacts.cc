#include "job_artifacts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/stubs/common.h"
#include "gradsync/core/sha256.h"

namespace gradsync::coordinator {
namespace {

// Longer paths are refused before anything is opened (PATH_MAX).
constexpr size_t kMaxPathBytes = 4096;
// Directories deeper than this are not listed.
constexpr int kMaxListDepth = 32;

// A descriptor closed when it goes out of scope.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
// O_NONBLOCK: opening a fifo must not wait for a writer before fstat can refuse it.
constexpr int kFileFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

int OpenAt(int dir, const std::string& name, int flags) {
  int fd;
  do {
    fd = ::openat(dir, name.c_str(), flags);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

bool IsUtf8(const std::string& s) {
  return google::protobuf::internal::IsStructurallyValidUTF8(s.data(), static_cast<int>(s.size()));
}

void SetModifyTime(const struct stat& st, v1::Artifact* a) {
  a->mutable_modify_time()->set_seconds(st.st_mtim.tv_sec);
  a->mutable_modify_time()->set_nanos(static_cast<int32_t>(st.st_mtim.tv_nsec));
}

absl::Status NoSuchArtifact(const std::string& path, const std::string& job_id) {
  return absl::NotFoundError(absl::StrCat("path: \"", path, "\": job ", job_id, " has no such artifact"));
}

absl::Status ThroughLink(const std::string& path, const std::string& component) {
  return absl::InvalidArgumentError(
      absl::StrCat("path: \"", path, "\": \"", component,
                   "\" is a symbolic link; only regular files inside the job's directory are served, never through "
                   "a link"));
}

// Why openat of `name` in `dir` failed with `err`, for artifact `path`.
absl::Status OpenFailure(int dir, const std::string& name, int err, const std::string& path,
                         const std::string& job_id) {
  struct stat st;
  if (err == ELOOP || ((err == ENOTDIR || err == EMLINK) &&
                       ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))) {
    return ThroughLink(path, name);
  }
  if (err == ENOENT || err == ENOTDIR) return NoSuchArtifact(path, job_id);
  return absl::InternalError(absl::StrCat("path: \"", path, "\": cannot open: ", std::strerror(err)));
}

// The listing under construction, and what bounds it.
struct Listing {
  const std::string& prefix;
  std::vector<v1::Artifact> files;
  size_t path_bytes = 0;
};

absl::Status TooMany(const std::string& prefix) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "prefix: \"", prefix, "\" matches more than ", kMaxListedArtifacts, " files or ", kMaxListedPathBytes,
      " bytes of paths; list a narrower prefix (a subdirectory such as \"checkpoints/\")"));
}

// Adds the regular files below the open directory `dir` (at relative path `rel`, "" or ending
// in '/') that match the listing's prefix. Takes `dir`.
absl::Status Walk(UniqueFd dir, const std::string& rel, int depth, Listing& listing) {
  DIR* d = ::fdopendir(dir.get());
  if (d == nullptr) return absl::InternalError(absl::StrCat("listing \"", rel, "\": ", std::strerror(errno)));
  dir.release();
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && IsUtf8(name)) names.push_back(name);
  }
  const int fd = ::dirfd(d);
  absl::Status status;
  for (const std::string& name : names) {
    struct stat st;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    const std::string path = rel + name;
    if (S_ISDIR(st.st_mode)) {
      const std::string sub = path + "/";
      if (!absl::StartsWith(sub, listing.prefix) && !absl::StartsWith(listing.prefix, sub)) continue;
      if (depth >= kMaxListDepth) continue;
      UniqueFd child(OpenAt(fd, name, kDirFlags));
      if (child.get() < 0) continue;  // replaced by a link meanwhile, or unreadable
      status = Walk(std::move(child), sub, depth + 1, listing);
      if (!status.ok()) break;
    } else if (S_ISREG(st.st_mode) && st.st_nlink == 1 && absl::StartsWith(path, listing.prefix)) {
      listing.path_bytes += path.size();
      if (listing.files.size() >= kMaxListedArtifacts || listing.path_bytes > kMaxListedPathBytes) {
        status = TooMany(listing.prefix);
        break;
      }
      v1::Artifact& a = listing.files.emplace_back();
      a.set_path(path);
      a.set_size_bytes(st.st_size);
      SetModifyTime(st, &a);
    }
  }
  ::closedir(d);
  return status;
}

// The SHA-256 of the whole file, or "" when it cannot be read now (it changed since listed).
std::string HashOf(const JobArtifacts& artifacts, const std::string& path) {
  absl::StatusOr<ArtifactFile> file = artifacts.Open(path);
  if (!file.ok()) return "";
  Sha256 hash;
  std::string chunk;
  do {
    if (!file->Read(kArtifactChunkBytes, &chunk).ok()) return "";
    hash.Update(chunk);
  } while (!chunk.empty());
  return hash.HexDigest();
}

}  // namespace

absl::Status CheckArtifactPath(absl::string_view field, const std::string& path, bool allow_trailing_slash) {
  if (path.empty()) {
    if (allow_trailing_slash) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": required: a file's path relative to the job's directory, as `gradsync artifacts list` prints it"));
  }
  const std::string quoted = absl::StrCat(field, ": \"", path, "\"");
  if (path.size() > kMaxPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": longer than ", kMaxPathBytes, " bytes"));
  }
  if (path.find('\0') != std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat(field, ": contains a NUL byte"));
  if (path.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(quoted,
                     " is absolute; give it relative to the job's directory, as `gradsync artifacts list` "
                     "prints it"));
  }
  absl::string_view body = path;
  if (allow_trailing_slash && absl::EndsWith(body, "/")) body.remove_suffix(1);
  for (absl::string_view part : absl::StrSplit(body, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(quoted, " has a \"..\" component; artifacts are read only inside the job's directory"));
    }
    if (part.empty() || part == ".") {
      return absl::InvalidArgumentError(absl::StrCat(quoted, " has an empty or \".\" component"));
    }
  }
  return absl::OkStatus();
}

ArtifactFile::ArtifactFile(ArtifactFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), info_(std::move(other.info_)), remaining_(other.remaining_) {}

ArtifactFile::~ArtifactFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ArtifactFile::Read(size_t max, std::string* out) {
  out->clear();
  if (remaining_ <= 0 || max == 0) return absl::OkStatus();
  out->resize(std::min<int64_t>(static_cast<int64_t>(max), remaining_));
  ssize_t n;
  do {
    n = ::read(fd_, out->data(), out->size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int err = errno;
    out->clear();
    return absl::InternalError(absl::StrCat("path: \"", info_.path(), "\": read failed: ", std::strerror(err)));
  }
  out->resize(static_cast<size_t>(n));
  remaining_ = n == 0 ? 0 : remaining_ - n;
  return absl::OkStatus();
}

absl::StatusOr<v1::ListArtifactsResponse> JobArtifacts::List(const std::string& prefix, bool sha256) const {
  if (absl::Status s = CheckArtifactPath("prefix", prefix, /*allow_trailing_slash=*/true); !s.ok()) return s;
  v1::ListArtifactsResponse out;
  UniqueFd root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return out;  // no artifact root yet: nothing written
  UniqueFd dir(OpenAt(root.get(), job_id_, kDirFlags));
  if (dir.get() < 0) return out;  // the job wrote nothing yet (or its directory is a link: served never)
  Listing listing{prefix, {}};
  if (absl::Status s = Walk(std::move(dir), "", 0, listing); !s.ok()) return s;
  std::sort(listing.files.begin(), listing.files.end(),
            [](const v1::Artifact& a, const v1::Artifact& b) { return a.path() < b.path(); });
  for (v1::Artifact& a : listing.files) {
    if (sha256) a.set_sha256(HashOf(*this, a.path()));
    *out.add_artifacts() = std::move(a);
  }
  return out;
}

absl::StatusOr<ArtifactFile> JobArtifacts::Open(const std::string& path) const {
  if (absl::Status s = CheckArtifactPath("path", path); !s.ok()) return s;
  UniqueFd root(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return NoSuchArtifact(path, job_id_);
  UniqueFd dir(OpenAt(root.get(), job_id_, kDirFlags));
  if (dir.get() < 0) return NoSuchArtifact(path, job_id_);
  const std::vector<std::string> parts = absl::StrSplit(path, '/');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const int fd = OpenAt(dir.get(), parts[i], kDirFlags);
    if (fd < 0) return OpenFailure(dir.get(), parts[i], errno, path, job_id_);
    dir.reset(fd);
  }
  UniqueFd file(OpenAt(dir.get(), parts.back(), kFileFlags));
  if (file.get() < 0) return OpenFailure(dir.get(), parts.back(), errno, path, job_id_);
  struct stat st;
  if (::fstat(file.get(), &st) != 0) {
    return absl::InternalError(absl::StrCat("path: \"", path, "\": cannot stat: ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("path: \"", path, "\" is a directory; `gradsync artifacts list` shows its files"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("path: \"", path, "\" is not a regular file"));
  }
  if (st.st_nlink != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "path: \"", path, "\" has other hard links; only files written into the job's directory are served"));
  }
  v1::Artifact info;
  info.set_path(path);
  info.set_size_bytes(st.st_size);
  SetModifyTime(st, &info);
  return ArtifactFile(file.release(), std::move(info));
}

absl::Status SendArtifact(ArtifactFile& file, const std::function<bool(const v1::GetArtifactResponse&)>& write,
                          const std::function<bool()>& cancelled) {
  const absl::Status gone = absl::CancelledError("the client went away");
  v1::GetArtifactResponse msg;
  *msg.mutable_header() = file.info();
  if (!write(msg)) return gone;
  Sha256 hash;
  int64_t sent = 0;
  std::string chunk;
  for (;;) {
    if (cancelled()) return gone;
    if (absl::Status s = file.Read(kArtifactChunkBytes, &chunk); !s.ok()) return s;
    if (chunk.empty()) break;
    hash.Update(chunk);
    sent += static_cast<int64_t>(chunk.size());
    msg.set_data(std::move(chunk));
    if (!write(msg)) return gone;
    chunk = std::string();
  }
  v1::ArtifactTrailer& trailer = *msg.mutable_trailer();
  trailer.set_size_bytes(sent);
  trailer.set_sha256(hash.HexDigest());
  return write(msg) ? absl::OkStatus() : gone;
}

absl::Status ArtifactFile::Rewind() {
  if (::lseek(fd_, 0, SEEK_SET) != 0) {
    return absl::InternalError(
        absl::StrCat("path: \"", info_.path(), "\": cannot read it again: ", std::strerror(errno)));
  }
  remaining_ = info_.size_bytes();
  return absl::OkStatus();
}

absl::StatusOr<std::string> HashArtifact(ArtifactFile& file, int64_t max_bytes) {
  const int64_t size = file.info().size_bytes();
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("path: \"", file.info().path(), "\" is ", size,
                                                     " bytes, over the REST gateway's limit of ", max_bytes,
                                                     " bytes per artifact; fetch it over gRPC (an address HOST:PORT)"));
  }
  Sha256 sum;
  std::string chunk;
  do {
    if (absl::Status s = file.Read(kArtifactChunkBytes, &chunk); !s.ok()) return s;
    sum.Update(chunk);
  } while (!chunk.empty());
  if (absl::Status s = file.Rewind(); !s.ok()) return s;
  return sum.HexDigest();
}

}  // namespace gradsync::coordinator
