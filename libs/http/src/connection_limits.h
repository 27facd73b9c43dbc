// How many connections a Server holds open at once, in all and per client address. A connection
// is counted from accept until it is closed, whether it is still sending its head, waiting in a
// worker queue, being served or idle between kept-alive requests.
#pragma once

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace gradsync::http {

class ConnectionLimits;

// One admitted connection's place; releasing it (destruction) lets another in. Move-only.
class Admission {
 public:
  Admission() = default;
  Admission(Admission&& other) noexcept;
  Admission& operator=(Admission&& other) noexcept;
  ~Admission();

 private:
  friend class ConnectionLimits;
  Admission(ConnectionLimits* limits, std::string client) : limits_(limits), client_(std::move(client)) {}

  ConnectionLimits* limits_ = nullptr;
  std::string client_;
};

// Thread-safe. Must outlive every Admission it hands out.
class ConnectionLimits {
 public:
  ConnectionLimits(int max_total, int max_per_client) : max_total_(max_total), max_per_client_(max_per_client) {}

  // A place for one more connection from `client` (its IP address). RESOURCE_EXHAUSTED naming
  // the limit when the server or that client already holds its maximum.
  absl::StatusOr<Admission> Admit(const std::string& client);

 private:
  friend class Admission;
  void Release(const std::string& client);

  const int max_total_;
  const int max_per_client_;
  absl::Mutex mu_;
  int total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, int> per_client_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync::http
