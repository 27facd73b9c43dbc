// Test support: a real coordinator gRPC server on loopback, and N ranks as threads that form a
// Gloo communicator through it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::testing {

class CoordinatorServer {
 public:
  CoordinatorServer();
  ~CoordinatorServer();
  std::string address() const;
  std::unique_ptr<comm::KvClient> Kv(const std::string& job, int generation = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// GlooOptions for tests: the defaults with a 30 s timeout.
comm::GlooOptions TestGlooOptions();

// Runs fn(rank, communicator, kv) on `world` threads that rendezvous in namespace `job`, with
// `options` (a 30 s timeout unless given). Fails the current test if rendezvous fails.
void RunRanks(CoordinatorServer& server, const std::string& job, int world,
              const std::function<void(int rank, comm::Communicator& comm, comm::KvClient& kv)>& fn,
              comm::GlooOptions options = TestGlooOptions());

}  // namespace gradsync::testing
