// Gloo contexts formed through a real coordinator gRPC server on loopback, ranks as threads.
#include <numeric>
#include <thread>
#include <tuple>

#include "coordinator.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/gloo_store.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/rpc/server.h"
#include "grpc_services.h"
#include "gtest/gtest.h"

namespace gradsync::comm {
namespace {

class CoordinatorServer {
 public:
  CoordinatorServer()
      : coordinator_({}, std::make_unique<coordinator::InMemoryJobStore>()), service_(&coordinator_) {
    auto s = rpc::StartServer("127.0.0.1:0", {&service_});
    EXPECT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
  }
  ~CoordinatorServer() {
    coordinator_.Shutdown();
    server_->Shutdown(absl::Seconds(1));
  }
  std::shared_ptr<v1::CoordinatorService::Stub> Stub() {
    return v1::CoordinatorService::NewStub(rpc::MakeChannel("127.0.0.1:" + std::to_string(server_->port())));
  }

 private:
  coordinator::Coordinator coordinator_;
  coordinator::CoordinatorServiceImpl service_;
  std::unique_ptr<rpc::RunningServer> server_;
};

// Runs fn(rank, communicator) on `world` threads that rendezvous through the server.
template <typename Fn>
void RunRanks(CoordinatorServer& server, const std::string& job, int world, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      auto kv = NewCoordinatorKvClient(server.Stub(), job, 1);
      GlooOptions opts;
      opts.timeout = absl::Seconds(30);
      auto comm = ConnectGloo(kv.get(), r, world, opts);
      ASSERT_TRUE(comm.ok()) << comm.status();
      fn(r, **comm);
    });
  }
  for (auto& t : threads) t.join();
}

class GlooCollectives : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(GlooCollectives, AllReduceSumsAndBroadcastCopies) {
  const auto [world, count] = GetParam();
  CoordinatorServer server;
  RunRanks(server, "allreduce", world, [&, world = world, count = count](int rank, Communicator& comm) {
    EXPECT_EQ(comm.rank(), rank);
    EXPECT_EQ(comm.size(), world);
    std::vector<float> data(count);
    for (int i = 0; i < count; ++i) data[i] = static_cast<float>(rank * 1000 + i);
    ASSERT_TRUE(comm.AllReduceSum(std::span<float>(data)).ok());
    for (int i = 0; i < count; ++i) {
      const float expected = static_cast<float>(1000 * (world * (world - 1) / 2) + world * i);
      ASSERT_EQ(data[i], expected) << "element " << i << " on rank " << rank;
    }
    std::vector<double> pair = {1.5 * rank, 1.0};
    ASSERT_TRUE(comm.AllReduceSum(std::span<double>(pair)).ok());
    EXPECT_DOUBLE_EQ(pair[1], world);
    std::vector<float> b(count, static_cast<float>(rank + 7));
    ASSERT_TRUE(comm.Broadcast(std::span<float>(b), world - 1).ok());
    for (float v : b) ASSERT_EQ(v, static_cast<float>(world - 1 + 7));
    ASSERT_TRUE(comm.Barrier().ok());
    EXPECT_EQ(comm.sequence(), 4);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldByCount, GlooCollectives,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values(0, 1, 7, 100003)));

TEST(GlooRendezvous, FailsClearlyWhenAPeerNeverArrives) {
  CoordinatorServer server;
  auto kv = NewCoordinatorKvClient(server.Stub(), "lonely", 1);
  GlooOptions opts;
  opts.timeout = absl::Milliseconds(500);
  auto comm = ConnectGloo(kv.get(), 0, 2, opts);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(comm.status().message().find("rank 0 of 2"), std::string::npos) << comm.status();
}

TEST(GlooStore, SurfacesCoordinatorErrorsAsGlooExceptions) {
  // No server at this address: the store must throw, not hang or crash.
  auto stub = v1::CoordinatorService::NewStub(rpc::MakeChannel("127.0.0.1:1"));
  auto kv = NewCoordinatorKvClient(std::move(stub), "j", 1);
  KvGlooStore store(kv.get(), std::chrono::milliseconds(200));
  EXPECT_ANY_THROW(store.set("k", {'v'}));
}

}  // namespace
}  // namespace gradsync::comm
