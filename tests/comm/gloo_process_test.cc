// Gloo ranks in processes of their own (gloo_rank_process.cc) beside ranks as threads, formed
// through a real coordinator server: a rank SIGKILLed while its peers wait in a collective is
// named in their errors, and a rank that shares the others' host name but not their /dev/shm
// keeps the group on TCP, and an abort ends a collective whose peer froze anywhere in it.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gloo_ranks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

extern char** environ;

namespace gradsync::comm {
namespace {

using gradsync::testing::CoordinatorServer;
using gradsync::testing::TestGlooOptions;
using ::testing::HasSubstr;

constexpr int kNoNamespace = 77;  // gloo_rank_process: no mount namespace here

// gloo_rank_process running with `args`; killed and reaped when the test leaves it running.
class RankProcess {
 public:
  explicit RankProcess(std::vector<std::string> args) {
    args.insert(args.begin(), GRADSYNC_GLOO_RANK_PROCESS);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;
  ~RankProcess() {
    if (pid_ > 0 && !exit_status_.has_value()) Kill();
  }

  bool started() const { return pid_ > 0; }
  bool running() {
    if (exit_status_.has_value()) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
    exit_status_ = status;
    return false;
  }
  // Freezes the process (SIGSTOP) without closing anything; Kill() still ends it.
  void Stop() {
    if (running()) kill(pid_, SIGSTOP);
  }
  void Kill() {
    if (!running()) return;
    kill(pid_, SIGKILL);
    Reap();
  }
  // The exit code, or -1 for a process ended by a signal.
  int Reap() {
    int status = 0;
    if (!exit_status_.has_value() && waitpid(pid_, &status, 0) == pid_) exit_status_ = status;
    return exit_status_.has_value() && WIFEXITED(*exit_status_) ? WEXITSTATUS(*exit_status_) : -1;
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
};

std::vector<std::string> Join(const CoordinatorServer& server, const std::string& job, int rank, int world) {
  return {"--coordinator=" + server.address(), "--job=" + job, "--rank=" + std::to_string(rank),
          "--world=" + std::to_string(world)};
}

// Which survivor notices first depends on where each was in the ring when the socket closed. A
// survivor waiting on a live peer that already gave up ends as in the cluster: the coordinator
// aborts the generation, then the failed rank's worker tears its communicator down. So every
// failure that is not that abort names rank 2, and there is at least one.
TEST(GlooProcesses, ASurvivorsErrorNamesTheRankThatDiedMidCollective) {
  // As in the worker (InstallShutdownHandlers): Gloo writes to sockets without MSG_NOSIGNAL, and
  // a write to the dead rank's socket must fail, not end this process.
  std::signal(SIGPIPE, SIG_IGN);
  CoordinatorServer server;
  constexpr int kWorld = 3;
  std::vector<std::string> args = Join(server, "loss", 2, kWorld);
  args.push_back("--transport=tcp");
  args.push_back("--then=hang");
  RankProcess rank2(args);
  ASSERT_TRUE(rank2.started());
  GlooOptions options = TestGlooOptions();
  options.shared_memory = false;

  absl::Mutex mu;
  std::unique_ptr<Communicator> comms[2];  // guarded by mu
  int finished = 0;                        // guarded by mu
  absl::Status status[2];
  absl::Notification issued[2], aborted;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto kv = server.Kv("loss");
      absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectGloo(kv.get(), r, kWorld, options);
      std::vector<float> data(1 << 16, 1.0f);
      std::shared_ptr<Work> work;
      if (comm.ok()) {
        work = (*comm)->AllReduce(std::span<float>(data), ReduceOp::kSum);
        absl::MutexLock lock(&mu);
        comms[r] = *std::move(comm);
      } else {
        status[r] = comm.status();
      }
      issued[r].Notify();
      if (work != nullptr) status[r] = work->Wait();
      {
        absl::MutexLock lock(&mu);
        ++finished;
      }
      aborted.WaitForNotification();
      work.reset();
      absl::MutexLock lock(&mu);
      comms[r].reset();
    });
  }
  issued[0].WaitForNotification();
  issued[1].WaitForNotification();
  // Rank 2 is connected (the others' ConnectGloo returned) and outside the collective the others
  // are in: only its death can end that collective before Gloo's timeout.
  EXPECT_TRUE(rank2.running());
  rank2.Kill();
  {
    // The coordinator, once a rank reports its failure, ends the generation on every rank.
    mu.LockWhen(absl::Condition(
        +[](int* n) { return *n > 0; }, &finished));
    for (auto& c : comms) {
      if (c != nullptr) c->Abort();
    }
    mu.Unlock();
  }
  aborted.Notify();
  for (std::thread& t : ranks) t.join();

  int naming = 0;
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(status[r].ok()) << "rank " << r;
    if (status[r].code() == absl::StatusCode::kAborted) continue;
    ++naming;
    EXPECT_EQ(status[r].code(), absl::StatusCode::kUnavailable) << status[r];
    EXPECT_THAT(std::string(status[r].message()),
                HasSubstr(absl::StrCat("allreduce #0 on rank ", r, " of 3 failed: rank 2 (127.0.0.1:")));
  }
  EXPECT_GE(naming, 1) << status[0] << "; " << status[1];
}

// A peer frozen (SIGSTOP: what `docker pause` does, and as silent as a cut network: no connection
// closes) anywhere in a stream of all-reduces: rank 0's abort ends its collective at once, wherever
// in the ring it waits (on its own buffer, on Gloo's scratch buffers, on a full send buffer).
// Gloo's own timeout is 30 s; without a working abort the wait below would reach it.
TEST(GlooProcesses, AnAbortEndsTheCollectiveWhereverAFrozenPeerLeftIt) {
  std::signal(SIGPIPE, SIG_IGN);
  CoordinatorServer server;
  GlooOptions options = TestGlooOptions();
  options.shared_memory = false;
  constexpr int kRounds = 12;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    const std::string job = absl::StrCat("freeze-", round);
    std::vector<std::string> args = Join(server, job, 1, 2);
    args.push_back("--transport=tcp");
    args.push_back("--then=loop");
    RankProcess peer(args);
    ASSERT_TRUE(peer.started());
    auto kv = server.Kv(job);
    absl::StatusOr<std::unique_ptr<Communicator>> comm = ConnectGloo(kv.get(), 0, 2, options);
    ASSERT_TRUE(comm.ok()) << comm.status();
    absl::Notification ended;
    absl::Status failed;
    int64_t rounds_done = 0;
    std::thread rank0([&] {
      std::vector<float> bucket(1 << 18, 1.0f);
      for (;; ++rounds_done) {
        failed = (*comm)->AllReduce(std::span<float>(bucket), ReduceOp::kAverage)->Wait();
        if (!failed.ok()) break;
      }
      ended.Notify();
    });
    // Spread the freeze over the ring's phases: from the first collective to many in.
    absl::SleepFor(absl::Milliseconds(15 + 37 * round));
    peer.Stop();
    absl::SleepFor(absl::Milliseconds(200));
    (*comm)->Abort();
    const bool in_time = ended.WaitForNotificationWithTimeout(absl::Seconds(10));
    peer.Kill();  // closes its connections: a stuck rank 0 ends now, so the test can report
    rank0.join();
    EXPECT_TRUE(in_time) << "the abort did not end the collective; it ended later with " << failed;
    EXPECT_EQ(failed.code(), absl::StatusCode::kAborted) << failed << " after " << rounds_done << " all-reduces";
    comm->reset();
  }
}

// Ranks 0 and 1 are threads of this process; rank 2 is a process sharing their host name and, but
// for `own_dev_shm`, their /dev/shm.
void RunWithAProcessRank(bool own_dev_shm, const std::string& expected_backend) {
  CoordinatorServer server;
  constexpr int kWorld = 3;
  const std::string job = own_dev_shm ? "apart" : "together";
  std::vector<std::string> args = Join(server, job, 2, kWorld);
  args.push_back("--transport=shm");
  args.push_back("--then=allreduce");
  args.push_back("--backend=" + expected_backend);
  if (own_dev_shm) args.push_back("--own_dev_shm");
  RankProcess rank2(args);
  ASSERT_TRUE(rank2.started());
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto kv = server.Kv(job);
      auto comm = ConnectGloo(kv.get(), r, kWorld, TestGlooOptions());
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->backend(), expected_backend) << "rank " << r;
      std::vector<float> data(1000, static_cast<float>(r + 1));
      ASSERT_TRUE((*comm)->AllReduceSum(std::span<float>(data)).ok());
      for (float v : data) ASSERT_EQ(v, 6.0f);
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_EQ(rank2.Reap(), 0) << "rank 2 failed (its reason is on stderr)";
}

TEST(GlooProcesses, ARankInAnotherProcessOfTheHostSharesMemory) { RunWithAProcessRank(false, "gloo (shared memory)"); }

// Containers on one machine (or on several, all named "localhost") can share a host name and not
// /dev/shm: shared memory is used only when every rank maps rank 0's segment, never on the name.
TEST(GlooProcesses, ARankWithTheSameHostNameButAnotherDevShmKeepsTheGroupOnTcp) {
  RankProcess probe({"--then=probe", "--own_dev_shm"});
  ASSERT_TRUE(probe.started());
  const int probed = probe.Reap();
  if (probed == kNoNamespace) GTEST_SKIP() << "no mount namespace can be made here (needs root or user namespaces)";
  ASSERT_EQ(probed, 0);
  RunWithAProcessRank(true, "gloo");
}

}  // namespace
}  // namespace gradsync::comm
