#include "gradsync/core/shutdown.h"

#include <csignal>

#include <atomic>

#include "absl/time/clock.h"

namespace gradsync {
namespace {

std::atomic<bool> g_shutdown{false};

void OnSignal(int) { g_shutdown.store(true); }

}  // namespace

void InstallShutdownHandlers() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool ShutdownRequested() { return g_shutdown.load(); }

void RequestShutdown() { g_shutdown.store(true); }

bool WaitForShutdown(absl::Duration timeout) {
  // Signal handlers may only touch lock-free atomics, so waiting polls; 50 ms is far below
  // any drain deadline.
  const absl::Time deadline = absl::Now() + timeout;
  while (!g_shutdown.load() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  return g_shutdown.load();
}

}  // namespace gradsync
