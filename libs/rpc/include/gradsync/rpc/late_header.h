// A call metadata entry whose value is known only after the channel exists, such as the session a
// coordinator issues to a worker when it registers. Thread-safe: calls read it while it is set.
#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace gradsync::rpc {

class LateHeader {
 public:
  // `key` is a gRPC metadata key: lowercase, no "grpc-" prefix.
  explicit LateHeader(std::string key) : key_(std::move(key)) {}

  const std::string& key() const { return key_; }
  // Calls started afterwards carry `value`; an empty value sends nothing.
  void Set(std::string value) {
    absl::MutexLock lock(&mu_);
    value_ = std::move(value);
  }
  std::string value() const {
    absl::MutexLock lock(&mu_);
    return value_;
  }

 private:
  const std::string key_;
  mutable absl::Mutex mu_;
  std::string value_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync::rpc
