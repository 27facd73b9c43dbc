#include "launcher.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gradsync/cluster/local_cluster.h"
#include "gradsync/cluster/local_tokens.h"
#include "gradsync/core/child_process.h"
#include "gradsync/core/cpu_set.h"

namespace gradsync::bench {

absl::Status LaunchRanks(const RankLaunch& launch) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/gradsync-bench-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) return absl::InternalError("cannot create a temporary directory");

  cluster::LocalClusterOptions options;
  options.workers = 0;  // the coordinator alone, for rendezvous
  options.with_metrics = false;
  options.state_dir = dir;
  cluster::LocalCluster cluster(options);
  if (absl::Status s = cluster.Start(); !s.ok()) return s;

  const std::string self = BinaryDir() + "/gradsync-bench";
  std::vector<pid_t> pids;
  for (int r = 0; r < launch.ranks; ++r) {
    std::vector<std::string> argv = {self, launch.mode};
    argv.insert(argv.end(), launch.args.begin(), launch.args.end());
    argv.insert(argv.end(), {"--rank", absl::StrCat(r), "--ranks", absl::StrCat(launch.ranks), "--coordinator",
                             cluster.coordinator_address(), "--cluster-token-file",
                             cluster.token_files().at(cluster::kClusterToken)});
    if (const std::string share = ShareOfAllowedCpus(launch.ranks, r); launch.bind_cpus && !share.empty()) {
      argv.insert(argv.end(), {"--cpus", share});
    }
    auto pid = Spawn({argv, absl::StrCat(dir, "/rank", r, ".log"), TrainingEnvDefaults()});
    if (!pid.ok()) return pid.status();
    pids.push_back(*pid);
  }
  absl::Status result;
  for (int r = 0; r < launch.ranks; ++r) {
    int status = 0;
    ::waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result = absl::InternalError(
          absl::StrCat("rank ", r, " failed; its log ends:\n", TailFile(absl::StrCat(dir, "/rank", r, ".log"), 20)));
    }
  }
  std::fputs(TailFile(absl::StrCat(dir, "/rank0.log"), 1000).c_str(), stdout);
  std::fputs("\n", stdout);
  cluster.Stop();
  return result;
}

}  // namespace gradsync::bench
