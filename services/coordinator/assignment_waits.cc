#include "assignment_waits.h"

namespace gradsync::coordinator {

void AssignmentWaits::Wait(absl::Mutex* mu, const std::string& id, absl::Time deadline,
                           absl::FunctionRef<bool()> ready) {
  ++checks_;
  if (ready()) return;
  std::shared_ptr<absl::CondVar>& slot = cvs_[id];
  if (slot == nullptr) slot = std::make_shared<absl::CondVar>();
  const std::shared_ptr<absl::CondVar> cv = slot;
  ++waiters_;
  for (bool timed_out = false; !timed_out;) {
    timed_out = cv->WaitWithDeadline(mu, deadline);
    ++checks_;
    if (ready()) break;
  }
  --waiters_;
}

void AssignmentWaits::Wake(const std::string& id) {
  auto it = cvs_.find(id);
  if (it != cvs_.end()) it->second->SignalAll();
}

void AssignmentWaits::Forget(const std::string& id) {
  auto it = cvs_.find(id);
  if (it == cvs_.end()) return;
  it->second->SignalAll();
  cvs_.erase(it);
}

void AssignmentWaits::WakeAll() {
  for (auto& [id, cv] : cvs_) cv->SignalAll();
}

}  // namespace gradsync::coordinator
