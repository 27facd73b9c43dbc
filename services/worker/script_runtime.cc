#include "script_runtime.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/core/bounded_file.h"
#include "gradsync/core/child_process.h"
#include "gradsync/core/endpoints_file.h"
#include "gradsync/core/json_depth.h"

namespace gradsync::worker {
namespace {

constexpr int64_t kMaxProgressBytes = 1 << 20;

}  // namespace

absl::StatusOr<ScriptRuntime> ScriptRuntime::Create(const v1::ScriptRankContext& context,
                                                    const ScriptSecrets& secrets) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/gradsync-rank-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a runtime directory like ", pattern, ": ", std::strerror(errno)));
  }
  ScriptRuntime runtime(pattern);
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(context, &json, options).ok()) {
    return absl::InternalError("the rank's context does not print as JSON");
  }
  if (absl::Status s = ReplaceFileAtomically(runtime.dir_ + "/rank.json", json); !s.ok()) return s;
  if (absl::Status s = ReplaceFileAtomically(runtime.dir_ + "/session", secrets.session); !s.ok()) return s;
  if (!secrets.cluster_token.empty()) {
    if (absl::Status s = ReplaceFileAtomically(runtime.dir_ + "/cluster-token", secrets.cluster_token); !s.ok()) return s;
  }
  if (!secrets.tls_ca_pem.empty()) {
    if (absl::Status s = ReplaceFileAtomically(runtime.dir_ + "/ca.pem", secrets.tls_ca_pem); !s.ok()) return s;
  }
  return runtime;
}

ScriptRuntime::ScriptRuntime(ScriptRuntime&& other) noexcept
    : dir_(std::move(other.dir_)), progress_seen_(other.progress_seen_) {
  other.dir_.clear();
}

ScriptRuntime::~ScriptRuntime() {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> ScriptRuntime::Environment(const std::string& python_dir, const std::string& inherited) const {
  std::vector<std::string> env = {absl::StrCat("GRADSYNC_RUNTIME_DIR=", dir_)};
  if (!python_dir.empty()) {
    env.push_back(absl::StrCat("PYTHONPATH=", python_dir, inherited.empty() ? "" : ":", inherited));
  }
  return env;
}

std::optional<v1::ScriptProgress> ScriptRuntime::ReadProgressIfChanged() {
  const std::string path = dir_ + "/progress.json";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  const absl::Time modified = absl::TimeFromTimespec(st.st_mtim);
  if (modified == progress_seen_) return std::nullopt;
  absl::StatusOr<std::string> text = ReadBoundedFile(path, kMaxProgressBytes, "the script's progress");
  if (!text.ok()) return std::nullopt;
  // The child writes this file: its nesting is bounded before the heartbeat's thread parses it.
  if (!CheckJsonDepth(*text, path).ok()) return std::nullopt;
  v1::ScriptProgress progress;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(*text, &progress, options).ok()) return std::nullopt;
  progress_seen_ = modified;
  return progress;
}

std::optional<ScriptRuntime::ExchangeCounters> ScriptRuntime::ReadExchangeCounters() const {
  absl::StatusOr<std::string> text = ReadBoundedFile(dir_ + "/exchange", 256, "the script's exchange counters");
  if (!text.ok()) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ');
  ExchangeCounters c;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &c.issued) || !absl::SimpleAtoi(parts[1], &c.finished)) {
    return std::nullopt;
  }
  return c;
}

std::string PythonPackageDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  namespace fs = std::filesystem;
  const fs::path bin = BinaryDir();
  for (const fs::path& dir : {bin / ".." / "python", bin / ".." / "lib" / "gradsync" / "python"}) {
    std::error_code ec;
    if (fs::exists(dir / "gradsync" / "__init__.py", ec)) return fs::weakly_canonical(dir, ec).string();
  }
  return "";
}

}  // namespace gradsync::worker
