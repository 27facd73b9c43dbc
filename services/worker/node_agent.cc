#include "node_agent.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gradsync/core/log.h"
#include "gradsync/core/shutdown.h"

namespace gradsync::worker {

namespace {

// The status a worker's main returns when its flags or configuration are refused.
constexpr int kRefusedFlags = 2;

}  // namespace

NodeAgent::NodeAgent(NodeAgentOptions options) : options_(std::move(options)) {
  for (NodeWorker& w : options_.workers) {
    children_.push_back({.worker = std::move(w), .backoff = options_.first_backoff});
  }
  options_.workers.clear();
}

NodeAgent::~NodeAgent() {
  for (Child& c : children_) {
    if (c.pid > 0 && Alive(c.pid)) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, nullptr, 0);
    }
  }
}

absl::Status NodeAgent::Start(Child& child) {
  absl::StatusOr<pid_t> pid = Spawn({child.worker.argv, "", options_.env_defaults});
  if (!pid.ok()) return pid.status();
  child.pid = *pid;
  child.started = absl::Now();
  GS_LOG(INFO) << "started " << child.worker.name << " (pid " << child.pid
               << (child.restarts > 0 ? absl::StrCat(", restart ", child.restarts) : "") << ")";
  return absl::OkStatus();
}

bool NodeAgent::Reap(Child& child, absl::Time now) {
  const std::optional<int> status = ReapIfExited(child.pid);
  if (!status.has_value()) return true;
  const absl::Duration ran = now - child.started;
  if (WIFEXITED(*status) && WEXITSTATUS(*status) == kRefusedFlags) {
    GS_LOG(ERROR) << child.worker.name << " (pid " << child.pid << ") refused its flags (exit status 2, its error is "
                  << "above): not restarted, since every restart would be refused the same way";
    child.pid = -1;
    return false;
  }
  if (ran >= options_.stable_after) child.backoff = options_.first_backoff;
  child.restart_at = now + child.backoff;
  GS_LOG(WARNING) << child.worker.name << " (pid " << child.pid << ") " << DescribeWaitStatus(*status) << " after "
                  << absl::FormatDuration(absl::Trunc(ran, absl::Milliseconds(100))) << "; starting it again in "
                  << absl::FormatDuration(child.backoff);
  child.backoff = std::min(child.backoff * 2, options_.max_backoff);
  child.pid = -1;
  ++child.restarts;
  return true;
}

int NodeAgent::Run() {
  GS_LOG(INFO) << "supervising " << children_.size() << " workers";
  for (Child& c : children_) {
    if (absl::Status s = Start(c); !s.ok()) {
      GS_LOG(ERROR) << "cannot start " << c.worker.name << ": " << s;
      StopChildren();
      return 1;
    }
  }
  while (!ShutdownRequested()) {
    const absl::Time now = absl::Now();
    for (Child& c : children_) {
      if (c.pid > 0) {
        if (!Reap(c, now)) {
          StopChildren();
          return kRefusedFlags;
        }
        continue;
      }
      if (now < c.restart_at) continue;
      if (absl::Status s = Start(c); !s.ok()) {
        GS_LOG(WARNING) << "cannot start " << c.worker.name << " again: " << s;
        c.restart_at = now + c.backoff;
      }
    }
    WaitForShutdown(options_.poll);
  }
  GS_LOG(INFO) << "stopping " << children_.size() << " workers (SIGTERM, then SIGKILL after "
               << absl::FormatDuration(options_.stop_grace) << ")";
  StopChildren();
  return 0;
}

void NodeAgent::StopChildren() {
  std::vector<pid_t> running;
  for (const Child& c : children_) {
    if (c.pid > 0) running.push_back(c.pid);
  }
  const absl::Time begin = absl::Now();
  StopAll(running, options_.stop_grace);
  for (Child& c : children_) c.pid = -1;
  GS_LOG(INFO) << "stopped " << running.size() << (running.size() == 1 ? " worker" : " workers") << " in "
               << absl::FormatDuration(absl::Trunc(absl::Now() - begin, absl::Milliseconds(10)));
}

}  // namespace gradsync::worker
