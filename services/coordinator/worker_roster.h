// What JobService.ListWorkers reports: each lease of the pool as a v1::Worker, and the workers lost
// recently. The pool forgets a lost worker's lease at once (its id may never come back), so
// LostWorkers keeps what the lease said, for an hour and for the most recent kMaxKept only: a
// worker that keeps dying and registering again cannot grow the list without bound.
// Not thread-safe: the coordinator keeps it under its lock.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "absl/time/time.h"
#include "gradsync/v1/worker.pb.h"
#include "worker_pool.h"

namespace gradsync::coordinator {

// `lease` as the listing shows it at `now`: IDLE, or BUSY with the rank it holds.
v1::Worker DescribeLease(const WorkerLease& lease, absl::Time now);

class LostWorkers {
 public:
  static constexpr size_t kMaxKept = 256;
  static constexpr absl::Duration kKeptFor = absl::Hours(1);

  // Records `lease`, declared lost at `now`, dropping the oldest entry beyond kMaxKept.
  void Add(const WorkerLease& lease, absl::Time now);
  // The workers lost within kKeptFor before `now`, oldest loss first, with their heartbeat age as
  // of `now`; older entries are dropped.
  std::vector<v1::Worker> Recent(absl::Time now);
  size_t size() const { return lost_.size(); }

 private:
  struct Entry {
    v1::Worker worker;  // state LOST, lost_time set
    absl::Time last_seen;
    absl::Time lost_at;
  };
  std::deque<Entry> lost_;
};

}  // namespace gradsync::coordinator
