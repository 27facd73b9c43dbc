#include "artifact_download.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "display.h"
#include "gradsync/core/sha256.h"
#include "gradsync/core/shutdown.h"

namespace gradsync::cli {
namespace {

namespace fs = std::filesystem;

absl::Status LocalError(const std::string& what, const std::string& file, int err) {
  return absl::InternalError(absl::StrCat(what, " ", file, ": ", std::strerror(err)));
}

// The file being written: a temporary file beside the destination, removed unless Commit ran,
// and the directories created for it, removed again (when empty) unless Commit ran.
class PartFile {
 public:
  ~PartFile() {
    if (fd_ >= 0) ::close(fd_);
    if (committed_) return;
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    std::error_code ec;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove(*it, ec);  // only empty ones go
  }

  // Creates the destination's directories and the temporary file.
  absl::Status Open(const fs::path& dest) {
    std::error_code ec;
    std::vector<fs::path> missing;
    for (fs::path d = dest.parent_path(); !d.empty() && !fs::exists(d, ec); d = d.parent_path()) missing.push_back(d);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (!fs::create_directory(*it, ec) && ec) return LocalError("cannot create", it->string(), ec.value());
      created_.push_back(*it);
    }
    std::string tmpl = (dest.parent_path() / absl::StrCat(".", dest.filename().string(), ".part-XXXXXX")).string();
    fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd_ < 0) return LocalError("cannot create", tmpl, errno);
    tmp_ = tmpl;
    return absl::OkStatus();
  }

  absl::Status Write(absl::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return LocalError("cannot write", tmp_, errno);
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  // Flushes the file to disk, gives it the permissions a new file gets, and renames it to `dest`.
  absl::Status Commit(const fs::path& dest) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd_, 0666 & ~mask) != 0 || ::fsync(fd_) != 0) return LocalError("cannot write", tmp_, errno);
    if (::close(std::exchange(fd_, -1)) != 0) return LocalError("cannot write", tmp_, errno);
    if (::rename(tmp_.c_str(), dest.c_str()) != 0) return LocalError("cannot rename to", dest.string(), errno);
    committed_ = true;
    return absl::OkStatus();
  }

  bool open() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::string tmp_;
  std::vector<fs::path> created_;
  bool committed_ = false;
};

}  // namespace

absl::Status CheckDownloadPath(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("path: required");
  if (path.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("path: \"", path, "\" is absolute: it would be written outside the output directory"));
  }
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("path: \"", path, "\" has an empty, \".\" or \"..\" component: it is not written"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Downloaded> DownloadArtifact(JobClient& client, const std::string& job, const std::string& path,
                                            const std::string& dir, FILE* progress) {
  const fs::path dest = fs::path(dir) / path;
  PartFile part;
  Sha256 hash;
  int64_t received = 0;
  std::unique_ptr<TransferProgress> shown;
  absl::Status opened;
  auto on_header = [&](const v1::Artifact& header) {
    opened = CheckDownloadPath(path);
    if (opened.ok()) opened = part.Open(dest);
    if (progress != nullptr) shown = std::make_unique<TransferProgress>(progress, path, header.size_bytes());
  };
  auto on_data = [&](absl::string_view bytes) -> absl::Status {
    if (!opened.ok()) return opened;
    if (ShutdownRequested()) return absl::CancelledError("interrupted");
    if (absl::Status s = part.Write(bytes); !s.ok()) return s;
    hash.Update(bytes);
    received += static_cast<int64_t>(bytes.size());
    if (shown != nullptr) shown->Update(received);
    return absl::OkStatus();
  };
  absl::StatusOr<v1::ArtifactTrailer> sent = client.GetArtifact(job, path, on_header, on_data);
  if (shown != nullptr) shown->Finish();
  if (!sent.ok()) return sent.status();
  if (!opened.ok()) return opened;
  if (!part.open()) return absl::DataLossError(absl::StrCat("path: \"", path, "\": the coordinator sent no header"));
  Downloaded out{dest.string(), received, hash.HexDigest()};
  if (out.bytes != sent->size_bytes() || out.sha256 != sent->sha256()) {
    return absl::DataLossError(absl::StrCat("path: \"", path, "\": the copy does not match what the coordinator sent (",
                                            out.bytes, " bytes with SHA-256 ", out.sha256, " received, ",
                                            sent->size_bytes(), " bytes with SHA-256 ", sent->sha256(),
                                            " sent); nothing written"));
  }
  if (absl::Status s = part.Commit(dest); !s.ok()) return s;
  return out;
}

}  // namespace gradsync::cli
