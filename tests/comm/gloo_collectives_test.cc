// Gloo collectives with ranks as threads, formed through a real coordinator gRPC server, over
// each all-reduce transport: TCP, and shared memory with the default slot and with a slot so
// small that a buffer takes many rounds.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gloo_ranks.h"
#include "gradsync/comm/gloo_store.h"
#include "gradsync/rpc/server.h"
#include "gtest/gtest.h"

namespace gradsync::comm {
namespace {

using gradsync::testing::CoordinatorServer;
using gradsync::testing::RunRanks;
using gradsync::testing::TestGlooOptions;

float Value(int rank, int i) { return static_cast<float>(rank * 1000 + i % 997); }

const std::vector<std::string> kTransports = {"tcp", "shm", "shm-4k-slot"};

GlooOptions Transport(const std::string& name) {
  GlooOptions o = TestGlooOptions();
  o.shared_memory = name != "tcp";
  if (name == "shm-4k-slot") o.shared_memory_slot_bytes = 4096;
  return o;
}

// A transport's name as a test-name part (letters, digits and underscores only).
std::string TestName(std::string transport) {
  std::replace(transport.begin(), transport.end(), '-', '_');
  return transport;
}

std::string ExpectedBackend(const std::string& transport, int world) {
  return transport != "tcp" && world > 1 ? "gloo (shared memory)" : "gloo";
}

class GlooCollectives : public ::testing::TestWithParam<std::tuple<int, int, std::string>> {};

TEST_P(GlooCollectives, EveryCollectiveGivesTheExactResult) {
  const auto [world, count, transport] = GetParam();
  CoordinatorServer server;
  RunRanks(
      server, "collectives", world,
      [&, world = world, count = count, transport = transport](int rank, Communicator& comm, KvClient&) {
        EXPECT_EQ(comm.rank(), rank);
        EXPECT_EQ(comm.size(), world);
        EXPECT_EQ(comm.backend(), ExpectedBackend(transport, world));
        // AllReduce sum and average, float and double.
        std::vector<float> data(count);
        for (int i = 0; i < count; ++i) data[i] = Value(rank, i);
        ASSERT_TRUE(comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait().ok());
        for (int i = 0; i < count; ++i) {
          float expected = 0;
          for (int r = 0; r < world; ++r) expected += Value(r, i);
          ASSERT_EQ(data[i], expected) << "element " << i << " on rank " << rank;
        }
        std::vector<double> avg = {2.0 * rank, 1.0};
        ASSERT_TRUE(comm.AllReduce(std::span<double>(avg), ReduceOp::kAverage)->Wait().ok());
        EXPECT_DOUBLE_EQ(avg[0], world - 1.0);
        EXPECT_DOUBLE_EQ(avg[1], 1.0);

        // Broadcast from the last rank.
        std::vector<float> b(count, static_cast<float>(rank + 7));
        ASSERT_TRUE(comm.Broadcast(std::span<float>(b), world - 1)->Wait().ok());
        for (float v : b) ASSERT_EQ(v, static_cast<float>(world - 1 + 7));

        // AllGather: every rank's block, in rank order.
        std::vector<float> mine(count), all(static_cast<size_t>(count) * world);
        for (int i = 0; i < count; ++i) mine[i] = Value(rank, i);
        ASSERT_TRUE(comm.AllGather(mine, std::span<float>(all))->Wait().ok());
        for (int r = 0; r < world; ++r) {
          for (int i = 0; i < count; ++i) ASSERT_EQ(all[static_cast<size_t>(r) * count + i], Value(r, i));
        }

        // ReduceScatter: this rank's block of the sum, blocks uneven when count % world != 0.
        const auto [begin, end] = BlockRange(count, world, rank);
        std::vector<float> block(end - begin);
        ASSERT_TRUE(comm.ReduceScatter(mine, std::span<float>(block))->Wait().ok());
        for (int64_t i = begin; i < end; ++i) {
          float expected = 0;
          for (int r = 0; r < world; ++r) expected += Value(r, static_cast<int>(i));
          ASSERT_EQ(block[i - begin], expected) << "element " << i << " on rank " << rank;
        }
        ASSERT_TRUE(comm.Barrier()->Wait().ok());
        EXPECT_EQ(comm.sequence(), 6);
        EXPECT_EQ(comm.completed(), 6);
      },
      Transport(transport));
}

INSTANTIATE_TEST_SUITE_P(WorldByCountByTransport, GlooCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Values(0, 1, 7, 100003),
                                            ::testing::ValuesIn(kTransports)),
                         [](const auto& info) {
                           return absl::StrCat("world", std::get<0>(info.param), "_count", std::get<1>(info.param), "_",
                                               TestName(std::get<2>(info.param)));
                         });

// Values whose sums depend on the order of the additions, so a block summed in another order
// than the all-reduce's would differ in its last bits.
float Irregular(int rank, int i) {
  return std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(rank)) * 3e3f;
}

// Bounds that give the blocks of a sharded buffer: even (BlockRange), and skewed, with rank 0
// taking most and rank 1 nothing.
std::vector<std::vector<int64_t>> BlockLayouts(int64_t count, int world) {
  if (world == 1) return {EvenBounds(count, world)};
  const int64_t big = count * 3 / 4;
  std::vector<int64_t> skewed = {0, big};  // rank 0
  if (world > 2) skewed.push_back(big);    // rank 1: nothing
  const int rest = world + 1 - static_cast<int>(skewed.size());
  for (int j = 0; j < rest; ++j) skewed.push_back(big + BlockRange(count - big, rest, j).second);
  return {EvenBounds(count, world), skewed};
}

class GlooBlockCollectives : public ::testing::TestWithParam<std::tuple<int, int, std::string>> {};

// The all-reduce sums in rank order on every transport; ReduceScatterBlocks leaves a rank's block
// bitwise equal to the all-reduce's (sharded training depends on it); AllGatherBlocks leaves every rank with every
// block; both for uneven blocks, empty ones and, through Communicator's portable forms, as other backends run them.
TEST_P(GlooBlockCollectives, BlocksMatchTheAllReduceBitwiseAndGatherWhole) {
  const auto [world, count, transport] = GetParam();
  CoordinatorServer server;
  RunRanks(
      server, "blocks", world,
      [&, world = world, count = count](int rank, Communicator& comm, KvClient&) {
        std::vector<float> reduced(count);
        for (int i = 0; i < count; ++i) reduced[i] = Irregular(rank, i);
        ASSERT_TRUE(comm.AllReduce(std::span<float>(reduced), ReduceOp::kSum)->Wait().ok());
        // Every transport sums in rank order, ((x_0 + x_1) + x_2) + ...: the same bits over TCP as
        // through shared memory.
        for (int i = 0; i < count; ++i) {
          float want = Irregular(0, i);
          for (int r = 1; r < world; ++r) want += Irregular(r, i);
          ASSERT_EQ(std::bit_cast<uint32_t>(reduced[i]), std::bit_cast<uint32_t>(want))
              << "element " << i << " on rank " << rank << " is not the rank-order sum";
        }
        for (const std::vector<int64_t>& bounds : BlockLayouts(count, world)) {
          for (bool portable : {false, true}) {
            std::vector<float> data(count);
            for (int i = 0; i < count; ++i) data[i] = Irregular(rank, i);
            auto rs = portable ? comm.Communicator::ReduceScatterBlocks(std::span<float>(data), bounds)
                               : comm.ReduceScatterBlocks(std::span<float>(data), bounds);
            ASSERT_TRUE(rs->Wait().ok());
            for (int64_t i = bounds[rank]; i < bounds[rank + 1]; ++i) {
              ASSERT_EQ(std::bit_cast<uint32_t>(data[i]), std::bit_cast<uint32_t>(reduced[i]))
                  << "element " << i << " of rank " << rank << "'s block" << (portable ? " (portable)" : "");
            }
            std::vector<float> gathered(count, -1.0f);
            for (int64_t i = bounds[rank]; i < bounds[rank + 1]; ++i) gathered[i] = Value(rank, static_cast<int>(i));
            auto ag = portable ? comm.Communicator::AllGatherBlocks(std::span<float>(gathered), bounds)
                               : comm.AllGatherBlocks(std::span<float>(gathered), bounds);
            ASSERT_TRUE(ag->Wait().ok());
            for (int r = 0; r < world; ++r) {
              for (int64_t i = bounds[r]; i < bounds[r + 1]; ++i) {
                ASSERT_EQ(gathered[i], Value(r, static_cast<int>(i))) << "element " << i << " of rank " << r;
              }
            }
          }
        }
        const std::vector<int64_t> bad = {0, static_cast<int64_t>(count) + 1};
        std::vector<float> data(count);
        EXPECT_EQ(comm.ReduceScatterBlocks(std::span<float>(data), bad)->Wait().code(),
                  absl::StatusCode::kInvalidArgument);
        EXPECT_EQ(comm.AllGatherBlocks(std::span<float>(data), bad)->Wait().code(), absl::StatusCode::kInvalidArgument);
        ASSERT_TRUE(comm.Barrier()->Wait().ok());
      },
      Transport(transport));
}

INSTANTIATE_TEST_SUITE_P(WorldByCountByTransport, GlooBlockCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Values(0, 1, 7, 100003),
                                            ::testing::ValuesIn(kTransports)),
                         [](const auto& info) {
                           return absl::StrCat("world", std::get<0>(info.param), "_count", std::get<1>(info.param), "_",
                                               TestName(std::get<2>(info.param)));
                         });

class GlooTransport : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Transports, GlooTransport, ::testing::ValuesIn(kTransports),
                         [](const auto& info) { return TestName(info.param); });

TEST_P(GlooTransport, AsynchronousWorkCompletesInIssueOrder) {
  CoordinatorServer server;
  RunRanks(
      server, "async", 2,
      [](int rank, Communicator& comm, KvClient&) {
        std::vector<std::vector<float>> buffers(8, std::vector<float>(50000, static_cast<float>(rank + 1)));
        std::vector<std::shared_ptr<Work>> work;
        for (auto& b : buffers) work.push_back(comm.AllReduce(std::span<float>(b), ReduceOp::kSum));
        for (size_t i = 0; i < work.size(); ++i) {
          ASSERT_TRUE(work[i]->Wait(absl::Seconds(30)).ok());
          if (i > 0) {
            EXPECT_GE(work[i]->timing().started, work[i - 1]->timing().finished);
          }
          for (float v : buffers[i]) ASSERT_EQ(v, 3.0f);
        }
      },
      Transport(GetParam()));
}

TEST_P(GlooTransport, Bf16WireHalvesPrecisionNotCorrectness) {
  CoordinatorServer server;
  RunRanks(
      server, "bf16", 2,
      [](int rank, Communicator& comm, KvClient&) {
        std::vector<float> data(1000);
        for (int i = 0; i < 1000; ++i) data[i] = 0.001f * static_cast<float>(i + 1) * (rank + 1);
        ASSERT_TRUE(comm.AllReduce(std::span<float>(data), ReduceOp::kSum, WireType::kBFloat16)->Wait().ok());
        for (int i = 0; i < 1000; ++i) {
          const float exact = 0.003f * static_cast<float>(i + 1);
          ASSERT_NEAR(data[i], exact, 8e-3 * exact) << i;  // bf16 keeps 8 bits of mantissa
        }
      },
      Transport(GetParam()));
}

TEST_P(GlooTransport, AbortEndsACollectiveWhosePeerNeverAnswers) {
  CoordinatorServer server;
  // Rank 1 keeps its connections open, silent, until rank 0 is done: a frozen or partitioned
  // peer, whose connections never close. Only the abort can end rank 0's collective.
  absl::Notification rank0_done;
  RunRanks(
      server, "abort", 2,
      [&rank0_done](int rank, Communicator& comm, KvClient&) {
        if (rank == 1) {
          rank0_done.WaitForNotificationWithTimeout(absl::Seconds(60));
          return;
        }
        struct Done {
          absl::Notification* n;
          ~Done() { n->Notify(); }
        } done{&rank0_done};
        std::vector<float> data(1 << 20, 1.0f);
        auto work = comm.AllReduce(std::span<float>(data), ReduceOp::kSum);
        absl::SleepFor(absl::Milliseconds(300));
        EXPECT_FALSE(work->Done()) << "the peer never joined, so the all-reduce cannot have finished";
        EXPECT_EQ(comm.sequence(), 1);
        EXPECT_EQ(comm.completed(), 0) << "collective #0 is in flight";
        comm.Abort();
        // Gloo's own timeout here is 30 s: without the abort this wait would end DEADLINE_EXCEEDED.
        const absl::Status s = work->Wait(absl::Seconds(20));
        EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
        EXPECT_EQ(comm.AllReduce(std::span<float>(data), ReduceOp::kSum)->Wait().code(), absl::StatusCode::kAborted);
      },
      Transport(GetParam()));
}

TEST(GlooCollectives, MismatchedBufferSizesAreRefused) {
  CoordinatorServer server;
  RunRanks(server, "sizes", 1, [](int, Communicator& comm, KvClient&) {
    std::vector<float> in(10), out(3);
    EXPECT_EQ(comm.AllGather(in, std::span<float>(out))->Wait().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(comm.ReduceScatter(in, std::span<float>(out))->Wait().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(comm.Broadcast(std::span<float>(out), 5)->Wait().code(), absl::StatusCode::kInvalidArgument);
  });
}

TEST(GlooRendezvous, FailsClearlyWhenAPeerNeverArrives) {
  CoordinatorServer server;
  auto kv = server.Kv("lonely");
  GlooOptions opts;
  opts.timeout = absl::Milliseconds(500);
  auto comm = ConnectGloo(kv.get(), 0, 2, opts);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(comm.status().message().find("rank 0 of 2"), std::string::npos) << comm.status();
}

TEST(GlooStore, SurfacesCoordinatorErrorsAsGlooExceptions) {
  // No server at this address: the store must throw, not hang or crash.
  auto kv = NewCoordinatorKvClient(v1::CoordinatorService::NewStub(rpc::MakeChannel("127.0.0.1:1")), "j", 1);
  KvGlooStore store(kv.get(), std::chrono::milliseconds(200));
  EXPECT_ANY_THROW(store.set("k", {'v'}));
}

TEST(BlockRange, SplitsUnevenCountsWithTheRemainderFirst) {
  EXPECT_EQ(BlockRange(10, 3, 0), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(BlockRange(10, 3, 1), (std::pair<int64_t, int64_t>{4, 7}));
  EXPECT_EQ(BlockRange(10, 3, 2), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(BlockRange(2, 3, 2), (std::pair<int64_t, int64_t>{2, 2}));
}

}  // namespace
}  // namespace gradsync::comm
