// Gloo's rendezvous::Store on top of a KvClient, so Gloo's full-mesh connect exchanges its
// addresses through the coordinator rather than files or environment variables.
//
// Gloo's rendezvous code reports failures by exception, so this adapter throws
// gloo::IoException when the coordinator cannot be reached or a wait times out; ConnectGloo
// catches it at the module boundary.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "gloo/rendezvous/store.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::comm {

class KvGlooStore : public gloo::rendezvous::Store {
 public:
  // `kv` must outlive the store. `timeout` bounds every get and wait without an explicit one.
  KvGlooStore(KvClient* kv, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  KvClient* kv_;
  std::chrono::milliseconds timeout_;
};

}  // namespace gradsync::comm
