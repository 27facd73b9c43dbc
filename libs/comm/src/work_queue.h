// A single thread that runs communication operations one at a time in submission order, each
// with a Work handle the caller waits on. Keeping one thread per communicator makes every rank
// execute collectives in the order they were issued, which collectives require.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gradsync/comm/communicator.h"

namespace gradsync::comm {

class QueuedWork : public Work {
 public:
  absl::Status Wait(absl::Duration timeout) override;
  bool Done() const override;
  Timing timing() const override;
  void Start();
  void Complete(absl::Status status);

 private:
  mutable absl::Mutex mu_;
  Timing timing_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

class WorkQueue {
 public:
  WorkQueue();
  // Runs what is queued, then stops the thread.
  ~WorkQueue();

  // Queues `op`; its returned status completes the Work.
  std::shared_ptr<Work> Submit(std::function<absl::Status()> op);

 private:
  struct Item {
    std::function<absl::Status()> op;
    std::shared_ptr<QueuedWork> work;
  };
  void Loop();

  absl::Mutex mu_;
  std::deque<Item> items_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace gradsync::comm
