// The shared-memory all-reduce of ranks on one host (libs/comm/src/shm_allreduce.h), through the
// Gloo communicator that sets it up: ranks are threads here, and processes in the worker and
// bench tests (the DDP integration tests run two worker processes over it).
#include <dirent.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gloo_ranks.h"
#include "gtest/gtest.h"

namespace gradsync::comm {
namespace {

using gradsync::testing::CoordinatorServer;
using gradsync::testing::RunRanks;
using gradsync::testing::TestGlooOptions;

// Values whose float sum depends on the order of the additions.
std::vector<float> Ragged(int rank, size_t n) {
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

std::vector<std::string> OurSegments() {
  std::vector<std::string> names;
  const std::string prefix = absl::StrCat("gradsync-", getpid(), "-");
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (absl::StartsWith(e->d_name, prefix)) names.push_back(e->d_name);
    }
    closedir(d);
  }
  return names;
}

TEST(SharedMemoryAllReduce, EveryRankGetsTheSameBytesSummedInRankOrder) {
  constexpr int kWorld = 3;
  constexpr size_t kCount = 50001;  // several rounds of the 64 KiB slot, uneven blocks
  GlooOptions options = TestGlooOptions();
  options.shared_memory_slot_bytes = 64 << 10;
  std::vector<std::vector<float>> results(kWorld);
  CoordinatorServer server;
  RunRanks(
      server, "order", kWorld,
      [&](int rank, Communicator& comm, KvClient&) {
        ASSERT_EQ(comm.backend(), "gloo (shared memory)");
        std::vector<float> data = Ragged(rank, kCount);
        ASSERT_TRUE(comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait().ok());
        results[rank] = std::move(data);
      },
      options);
  std::vector<std::vector<float>> in;
  for (int r = 0; r < kWorld; ++r) in.push_back(Ragged(r, kCount));
  int order_mattered = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const float expected = (in[0][i] + in[1][i]) + in[2][i];
    order_mattered += expected != (in[2][i] + in[1][i]) + in[0][i];
    for (int r = 0; r < kWorld; ++r) ASSERT_EQ(results[r][i], expected) << "element " << i << " on rank " << r;
  }
  EXPECT_GT(order_mattered, 0) << "the data should tell the summation orders apart";
}

TEST(SharedMemoryAllReduce, LeavesNoNameInDevShmOnceEveryRankHasMappedIt) {
  CoordinatorServer server;
  RunRanks(server, "unlinked", 2, [](int, Communicator& comm, KvClient&) {
    ASSERT_EQ(comm.backend(), "gloo (shared memory)");
    // Every rank has finished setting up when the first collective completes on it.
    ASSERT_TRUE(comm.Barrier()->Wait().ok());
    const std::vector<std::string> left = OurSegments();
    EXPECT_TRUE(left.empty()) << left[0];
  });
}

TEST(SharedMemoryAllReduce, OneRanksAbortEndsThePeersCollective) {
  absl::Notification done;
  CoordinatorServer server;
  RunRanks(server, "abort-peer", 2, [&](int rank, Communicator& comm, KvClient&) {
    if (rank == 0) {
      // Rank 0 never joins the all-reduce: its generation is over, so it aborts.
      absl::SleepFor(absl::Milliseconds(300));
      comm.Abort();
      done.WaitForNotification();
      return;
    }
    std::vector<float> data(1000, 1.0f);
    const absl::Time start = absl::Now();
    const absl::Status s = comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait(absl::Seconds(20));
    done.Notify();
    EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "rank 0 ended the shared-memory group")) << s;
    EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << "the 30 s timeout, not the abort, ended it";
    EXPECT_EQ(data[0], 1.0f) << "a failed all-reduce leaves the buffer as it was";
  });
}

TEST(SharedMemoryAllReduce, APeerThatNeverArrivesIsNamedAtTheDeadlineAndTheGroupEnds) {
  GlooOptions options = TestGlooOptions();
  options.timeout = absl::Seconds(2);
  absl::Notification done;
  CoordinatorServer server;
  RunRanks(
      server, "late", 2,
      [&](int rank, Communicator& comm, KvClient&) {
        if (rank == 1) {
          done.WaitForNotification();
          // Too late: rank 0 gave up, so this rank must not find a half-finished round and go on
          // with a slot rank 0 may be writing again.
          std::vector<float> data(1000, 2.0f);
          const absl::Status s = comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait(absl::Seconds(20));
          EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
          EXPECT_TRUE(absl::StrContains(s.message(), "rank 0 ended the shared-memory group")) << s;
          EXPECT_EQ(data[0], 2.0f);
          return;
        }
        std::vector<float> data(1000, 1.0f);
        const absl::Status s = comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait(absl::Seconds(20));
        done.Notify();
        EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
        EXPECT_TRUE(absl::StrContains(s.message(), "rank(s) 1 did not arrive")) << s;
        EXPECT_TRUE(absl::StrContains(s.message(), "allreduce #0 on rank 0 of 2")) << s;
      },
      options);
}

TEST(SharedMemoryAllReduce, FallsBackToTcpWhenTheSegmentCannotBeReserved) {
  struct statvfs fs {};
  ASSERT_EQ(statvfs("/dev/shm", &fs), 0);
  GlooOptions options = TestGlooOptions();
  // A slot as large as all of /dev/shm: the segment of four slots cannot be reserved.
  options.shared_memory_slot_bytes = static_cast<size_t>(fs.f_blocks) * fs.f_frsize;
  CoordinatorServer server;
  RunRanks(
      server, "fallback", 2,
      [](int rank, Communicator& comm, KvClient&) {
        EXPECT_EQ(comm.backend(), "gloo");
        std::vector<float> data(1000, static_cast<float>(rank + 1));
        ASSERT_TRUE(comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait().ok());
        for (float v : data) ASSERT_EQ(v, 3.0f);
      },
      options);
  EXPECT_TRUE(OurSegments().empty());
}

}  // namespace
}  // namespace gradsync::comm
