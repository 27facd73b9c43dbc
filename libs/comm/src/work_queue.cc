#include "work_queue.h"

#include "absl/time/clock.h"

namespace gradsync::comm {

absl::Status QueuedWork::Wait(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return done_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::DeadlineExceededError("collective not done within the timeout");
  }
  return status_;
}

bool QueuedWork::Done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

Work::Timing QueuedWork::timing() const {
  absl::MutexLock lock(&mu_);
  return timing_;
}

void QueuedWork::Start() {
  absl::MutexLock lock(&mu_);
  timing_.started = absl::Now();
}

void QueuedWork::Complete(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (timing_.started == absl::Time()) timing_.started = absl::Now();
  timing_.finished = absl::Now();
  status_ = std::move(status);
  done_ = true;
}

std::shared_ptr<Work> CompletedWork(absl::Status status) {
  auto w = std::make_shared<QueuedWork>();
  w->Complete(std::move(status));
  return w;
}

WorkQueue::WorkQueue() : thread_([this] { Loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

std::shared_ptr<Work> WorkQueue::Submit(std::function<absl::Status()> op) {
  auto work = std::make_shared<QueuedWork>();
  absl::MutexLock lock(&mu_);
  items_.push_back({std::move(op), work});
  return work;
}

void WorkQueue::Loop() {
  for (;;) {
    Item item;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || !items_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (items_.empty()) return;
      item = std::move(items_.front());
      items_.pop_front();
    }
    item.work->Start();
    item.work->Complete(item.op());
  }
}

}  // namespace gradsync::comm
