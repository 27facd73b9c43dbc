// A script rank's runtime directory: what its child needs to speak to gradsync's services as its
// worker (gradsync/v1/script.proto), and the progress the child writes back.
//
//   rank.json       ScriptRankContext (protobuf JSON): the assignment, the worker id, addresses
//   session         the worker's session token (0600)
//   cluster-token   the cluster token, when the coordinator asks for one (0600)
//   ca.pem          the coordinator's CA, when the channel is TLS
//
// Each is written whole (0600, never through a link: ReplaceFileAtomically).
//   progress.json   written by the child (gradsync.torch.report): ScriptProgress
//   exchange        written by the child: its exchanges' collectives issued and finished
//
// The directory is private to the worker's user (0700, under $TMPDIR) and removed with its files
// when the generation ends. Its child gets GRADSYNC_RUNTIME_DIR, and PYTHONPATH with the gradsync
// Python package in front.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/v1/script.pb.h"

namespace gradsync::worker {

struct ScriptSecrets {
  std::string session;
  std::string cluster_token;
  std::string tls_ca_pem;
};

class ScriptRuntime {
 public:
  // Creates the directory and writes its files. INTERNAL naming the file that could not be written.
  static absl::StatusOr<ScriptRuntime> Create(const v1::ScriptRankContext& context, const ScriptSecrets& secrets);
  ScriptRuntime(ScriptRuntime&& other) noexcept;
  ScriptRuntime& operator=(ScriptRuntime&&) = delete;
  // Removes the directory.
  ~ScriptRuntime();

  const std::string& dir() const { return dir_; }
  // "NAME=value" for the child: GRADSYNC_RUNTIME_DIR, and PYTHONPATH with `python_dir` (when not
  // empty) before `inherited` (the PYTHONPATH the child would otherwise get).
  std::vector<std::string> Environment(const std::string& python_dir, const std::string& inherited) const;
  // The child's progress, when progress.json changed since the last call and parses; else nullopt.
  std::optional<v1::ScriptProgress> ReadProgressIfChanged();
  // The collectives the child's gradsync exchanges issued and finished (the file "exchange",
  // "<issued> <finished>", which the Python package rewrites while they change); nullopt before it
  // has one.
  struct ExchangeCounters {
    int64_t issued = 0;
    int64_t finished = 0;
  };
  std::optional<ExchangeCounters> ReadExchangeCounters() const;

 private:
  explicit ScriptRuntime(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;
  absl::Time progress_seen_ = absl::InfinitePast();
};

// The directory of the gradsync Python package: `flag` when set, else the first of
// <binaries>/../python (a build tree) and <binaries>/../lib/gradsync/python (an install) that
// holds gradsync/__init__.py; "" when none does.
std::string PythonPackageDir(const std::string& flag);

}  // namespace gradsync::worker
