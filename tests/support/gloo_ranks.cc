#include "gloo_ranks.h"

#include <thread>
#include <vector>

#include "coordinator.h"
#include "gradsync/rpc/server.h"
#include "grpc_services.h"
#include "gtest/gtest.h"

namespace gradsync::testing {

struct CoordinatorServer::Impl {
  coordinator::Coordinator coordinator{{}, std::make_unique<coordinator::InMemoryJobStore>()};
  coordinator::CoordinatorServiceImpl service{&coordinator, coordinator::TokenAuth()};
  std::unique_ptr<rpc::RunningServer> server;
};

CoordinatorServer::CoordinatorServer() : impl_(std::make_unique<Impl>()) {
  auto s = rpc::StartServer("127.0.0.1:0", {&impl_->service});
  EXPECT_TRUE(s.ok()) << s.status();
  if (s.ok()) impl_->server = *std::move(s);
}

CoordinatorServer::~CoordinatorServer() {
  impl_->coordinator.Shutdown();
  if (impl_->server) impl_->server->Shutdown(absl::Seconds(1));
}

std::string CoordinatorServer::address() const {
  return "127.0.0.1:" + std::to_string(impl_->server ? impl_->server->port() : 0);
}

std::unique_ptr<comm::KvClient> CoordinatorServer::Kv(const std::string& job, int generation) {
  return comm::NewCoordinatorKvClient(v1::CoordinatorService::NewStub(rpc::MakeChannel(address())), job, generation);
}

comm::GlooOptions TestGlooOptions() {
  comm::GlooOptions opts;
  opts.timeout = absl::Seconds(30);
  return opts;
}

void RunRanks(CoordinatorServer& server, const std::string& job, int world,
              const std::function<void(int, comm::Communicator&, comm::KvClient&)>& fn, comm::GlooOptions options) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      auto kv = server.Kv(job);
      auto c = comm::ConnectGloo(kv.get(), r, world, options);
      ASSERT_TRUE(c.ok()) << c.status();
      fn(r, **c, *kv);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace gradsync::testing
