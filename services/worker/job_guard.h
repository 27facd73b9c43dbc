// Where a job's failures stop. A job's input reaches libraries that throw: std::bad_alloc for a
// model too large for this machine, std::ios_base::failure from a stream, Gloo's exceptions from
// its transport, std::length_error from a container sized by a spec. Uncaught, any of them ends
// the worker process, and the coordinator, seeing a lost worker, retries the job on the next one.
// The agent runs each generation through RunGuarded instead: an exception fails that rank like an
// error status (reported to the coordinator with its cause), and the worker goes back to the pool.
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gradsync::worker {

// The status of the exception being handled; call only inside a catch block. RESOURCE_EXHAUSTED
// "out of memory (...)" for std::bad_alloc, INTERNAL naming the exception's message otherwise.
absl::Status StatusOfCurrentException();

// fn(), or the status of whatever it throws.
template <typename T, typename F>
absl::StatusOr<T> RunGuarded(F&& fn) {
  try {
    return std::forward<F>(fn)();
  } catch (...) {
    return StatusOfCurrentException();
  }
}

}  // namespace gradsync::worker
