// The client side of the coordinator's key-value store, used to rendezvous communicators.
// Keys live in one namespace per (job, generation); a client is bound to one namespace.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/v1/coordinator.grpc.pb.h"

namespace gradsync::comm {

class KvClient {
 public:
  virtual ~KvClient() = default;

  virtual absl::Status Set(const std::string& key, const std::string& value) = 0;
  // DEADLINE_EXCEEDED if the key does not appear within `timeout`.
  virtual absl::StatusOr<std::string> Get(const std::string& key, absl::Duration timeout) = 0;
  // Returns once every key exists; DEADLINE_EXCEEDED names the keys still missing.
  virtual absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) = 0;
  // Adds `delta` to the integer stored at `key` (0 if absent) and returns the new value.
  virtual absl::StatusOr<int64_t> Add(const std::string& key, int64_t delta) = 0;
};

// A KvClient over the coordinator's gRPC API. Thread-safe.
std::unique_ptr<KvClient> NewCoordinatorKvClient(std::shared_ptr<gradsync::v1::CoordinatorService::StubInterface> stub,
                                                 std::string job_id, int generation);

}  // namespace gradsync::comm
