// The NCCL backend with one rank (NCCL refuses two ranks on one GPU), and two ranks sharing one
// GPU through Gloo with pinned-host staging. Both need a GPU and skip without one.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "absl/time/clock.h"
#include "gloo_ranks.h"
#include "gradsync/comm/nccl.h"
#include "gtest/gtest.h"

namespace gradsync::comm {
namespace {

using testing::CoordinatorServer;
using testing::RunRanks;

// Skips the test unless a CUDA device is present.
#define REQUIRE_GPU()                                                                                 \
  do {                                                                                                \
    int count = 0;                                                                                    \
    const cudaError_t e = cudaGetDeviceCount(&count);                                                 \
    if (e != cudaSuccess || count == 0) {                                                             \
      GTEST_SKIP() << "no CUDA device: " << (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices"); \
    }                                                                                                 \
  } while (0)

// A device buffer holding `values`, read back with Host().
class DeviceFloats {
 public:
  explicit DeviceFloats(const std::vector<float>& values) : n_(values.size()) {
    EXPECT_EQ(cudaMalloc(&ptr_, std::max<size_t>(n_, 1) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, values.data(), n_ * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceFloats() { cudaFree(ptr_); }
  std::span<float> span() { return {static_cast<float*>(ptr_), n_}; }
  std::vector<float> Host() const {
    std::vector<float> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t n_;
};

std::vector<float> Iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i + 1);
  return v;
}

TEST(Nccl, OneRankRunsEveryCollectiveOnDeviceMemory) {
  REQUIRE_GPU();
  CoordinatorServer server;
  auto kv = server.Kv("nccl-one");
  NcclOptions options;
  options.timeout = absl::Seconds(60);
  auto comm = ConnectNccl(kv.get(), 0, 1, options);
  ASSERT_TRUE(comm.ok()) << comm.status();
  Communicator& c = **comm;
  EXPECT_EQ(c.backend(), "nccl");

  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{100003}}) {
    DeviceFloats x(Iota(n, 0.5f));
    ASSERT_TRUE(c.AllReduce(x.span(), ReduceOp::kSum)->Wait().ok());
    EXPECT_EQ(x.Host(), Iota(n, 0.5f)) << "one rank: the sum is the input, n=" << n;
    ASSERT_TRUE(c.AllReduce(x.span(), ReduceOp::kAverage)->Wait().ok());
    EXPECT_EQ(x.Host(), Iota(n, 0.5f));
    ASSERT_TRUE(c.Broadcast(x.span(), 0)->Wait().ok());
    DeviceFloats all(std::vector<float>(n, 0.0f));
    ASSERT_TRUE(c.AllGather(x.span(), all.span())->Wait().ok());
    EXPECT_EQ(all.Host(), Iota(n, 0.5f));
    DeviceFloats block(std::vector<float>(n, 0.0f));
    ASSERT_TRUE(c.ReduceScatter(x.span(), block.span())->Wait().ok());
    EXPECT_EQ(block.Host(), Iota(n, 0.5f));
  }
  // The block collectives of sharded data parallel: one rank owns the one block.
  for (size_t n : {size_t{0}, size_t{5}, size_t{100003}}) {
    DeviceFloats x(Iota(n, 0.25f));
    const std::vector<int64_t> bounds = {0, static_cast<int64_t>(n)};
    ASSERT_TRUE(c.ReduceScatterBlocks(x.span(), bounds)->Wait().ok());
    EXPECT_EQ(x.Host(), Iota(n, 0.25f)) << "n=" << n;
    ASSERT_TRUE(c.AllGatherBlocks(x.span(), bounds)->Wait().ok());
    EXPECT_EQ(x.Host(), Iota(n, 0.25f)) << "n=" << n;
  }
  {
    DeviceFloats x(Iota(4, 1.0f));
    const std::vector<int64_t> short_of_the_end = {0, 3};
    EXPECT_EQ(c.ReduceScatterBlocks(x.span(), short_of_the_end)->Wait().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(c.AllGatherBlocks(x.span(), short_of_the_end)->Wait().code(), absl::StatusCode::kInvalidArgument);
  }
  // bf16 on the wire keeps about three significant digits.
  DeviceFloats g(Iota(1000, 0.003f));
  ASSERT_TRUE(c.AllReduce(g.span(), ReduceOp::kSum, WireType::kBFloat16)->Wait().ok());
  const std::vector<float> rounded = g.Host();
  for (size_t i = 0; i < rounded.size(); ++i) {
    const float exact = 0.003f * static_cast<float>(i + 1);
    ASSERT_NEAR(rounded[i], exact, 8e-3 * exact) << i;
  }
  // Host doubles: the trainer's scalars.
  std::vector<double> scalars = {1.5, -2.25, 1e300};
  ASSERT_TRUE(c.AllReduce(std::span<double>(scalars), ReduceOp::kSum)->Wait().ok());
  EXPECT_EQ(scalars, (std::vector<double>{1.5, -2.25, 1e300}));
  ASSERT_TRUE(c.Barrier()->Wait().ok());
  EXPECT_EQ(c.completed(), c.sequence()) << "nothing left in flight";

  DeviceFloats two(std::vector<float>(2, 1.0f)), three(std::vector<float>(3, 0.0f));
  EXPECT_EQ(c.AllGather(two.span(), three.span())->Wait().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Broadcast(two.span(), 1)->Wait().code(), absl::StatusCode::kInvalidArgument);

  // After an abort (the coordinator ended the generation) every collective is refused.
  c.Abort();
  EXPECT_EQ(c.AllReduce(two.span(), ReduceOp::kSum)->Wait().code(), absl::StatusCode::kAborted);
}

// One NCCL rank whose collectives are ordered after a compute stream of the test's own.
class NcclAfterCompute : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_GPU();
    kv_ = server_.Kv("nccl-after-compute");
    ASSERT_EQ(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking), cudaSuccess);
    NcclOptions options;
    options.compute_stream = compute_;
    options.timeout = absl::Seconds(60);
    auto comm = ConnectNccl(kv_.get(), 0, 1, options);
    ASSERT_TRUE(comm.ok()) << comm.status();
    comm_ = *std::move(comm);
  }
  void TearDown() override {
    comm_.reset();  // before the stream it waits on
    if (compute_ != nullptr) cudaStreamDestroy(compute_);
  }

  CoordinatorServer server_;
  std::unique_ptr<KvClient> kv_;
  cudaStream_t compute_ = nullptr;
  std::unique_ptr<Communicator> comm_;
};

TEST_F(NcclAfterCompute, ACollectiveWaitsForTheComputeStream) {
  // The compute stream writes the buffer; the broadcast, issued right after without a host sync,
  // must see the written values (it is ordered after them by an event).
  const size_t n = 1 << 22;
  DeviceFloats x(std::vector<float>(n, 0.0f));
  std::vector<float> ones(n, 1.0f);
  float* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), n * sizeof(float)), cudaSuccess);
  std::copy(ones.begin(), ones.end(), pinned);
  ASSERT_EQ(cudaMemcpyAsync(x.span().data(), pinned, n * sizeof(float), cudaMemcpyHostToDevice, compute_), cudaSuccess);
  DeviceFloats copy(std::vector<float>(n, 0.0f));
  ASSERT_TRUE(comm_->AllGather(x.span(), copy.span())->Wait().ok());
  EXPECT_EQ(copy.Host(), ones);
  cudaFreeHost(pinned);
}

// The collective's timing is its time on the device: a compute stream held for 200 ms by a host
// function delays the all-reduce queued behind it, but that wait is not the all-reduce's.
TEST_F(NcclAfterCompute, TimingCountsTheCollectiveNotTheComputeItWaitedFor) {
  DeviceFloats x(Iota(1 << 16, 1.0f));
  const auto hold = [](void*) { absl::SleepFor(absl::Milliseconds(200)); };
  const absl::Time issued = absl::Now();
  ASSERT_EQ(cudaLaunchHostFunc(compute_, hold, nullptr), cudaSuccess);
  auto work = comm_->AllReduce(x.span(), ReduceOp::kSum);
  ASSERT_TRUE(work->Wait().ok());
  const absl::Time seen = absl::Now();
  const Work::Timing t = work->timing();
  EXPECT_GE(seen - issued, absl::Milliseconds(200));
  EXPECT_GE(t.finished, t.started);
  EXPECT_LE(t.finished, seen);
  EXPECT_LT(t.finished - t.started, absl::Milliseconds(100)) << "the wait for the compute stream was counted";
}

TEST(StagedGloo, TwoRanksShareOneGpuThroughPinnedHostBuffers) {
  REQUIRE_GPU();
  CoordinatorServer server;
  RunRanks(server, "staged", 2, [](int rank, Communicator& gloo, KvClient&) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    auto c = StageThroughHost(&gloo, 0, stream);
    for (size_t n : {size_t{1}, size_t{7}, size_t{100003}}) {
      DeviceFloats x(Iota(n, static_cast<float>(rank + 1)));
      ASSERT_TRUE(c->AllReduce(x.span(), ReduceOp::kSum)->Wait().ok());
      EXPECT_EQ(x.Host(), Iota(n, 3.0f)) << "1x + 2x on rank " << rank << ", n=" << n;
      DeviceFloats all(std::vector<float>(2 * n, 0.0f));
      DeviceFloats mine(Iota(n, static_cast<float>(rank + 1)));
      ASSERT_TRUE(c->AllGather(mine.span(), all.span())->Wait().ok());
      std::vector<float> expected = Iota(n, 1.0f);
      const std::vector<float> second = Iota(n, 2.0f);
      expected.insert(expected.end(), second.begin(), second.end());
      EXPECT_EQ(all.Host(), expected);
    }
    // Uneven blocks, one of them empty: rank 0 owns [0, 3), rank 1 [3, 7), and [7, 7) is nobody's
    // left over; with bounds {0, 0, 7} rank 0 owns nothing.
    for (const std::vector<int64_t>& bounds : {std::vector<int64_t>{0, 3, 7}, std::vector<int64_t>{0, 0, 7}}) {
      DeviceFloats x(Iota(7, static_cast<float>(rank + 1)));
      ASSERT_TRUE(c->ReduceScatterBlocks(x.span(), bounds)->Wait().ok());
      const std::vector<float> sum = Iota(7, 3.0f), got = x.Host();
      for (int64_t i = bounds[rank]; i < bounds[rank + 1]; ++i)
        EXPECT_EQ(got[i], sum[i]) << "rank " << rank << " " << i;
      // Each rank's block holds its own values; the all-gather leaves every block everywhere.
      std::vector<float> own(7, -1.0f), expected(7);
      for (int r = 0; r < 2; ++r) {
        for (int64_t i = bounds[r]; i < bounds[r + 1]; ++i) {
          expected[i] = static_cast<float>(100 * (r + 1) + i);
          if (r == rank) own[i] = expected[i];
        }
      }
      DeviceFloats y(own);
      ASSERT_TRUE(c->AllGatherBlocks(y.span(), bounds)->Wait().ok());
      EXPECT_EQ(y.Host(), expected) << "rank " << rank;
    }
    EXPECT_NE(c->backend().find("staged"), std::string::npos);
    c.reset();
    cudaStreamDestroy(stream);
  });
}

}  // namespace
}  // namespace gradsync::comm
