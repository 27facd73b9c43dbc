#include "gradsync/core/shutdown.h"

#include <time.h>

#include <csignal>
#include <cstdint>

#include <atomic>

#include "absl/time/clock.h"

namespace gradsync {
namespace {

std::atomic<bool> g_shutdown{false};
std::atomic<int64_t> g_requested_at_ns{0};

// Async-signal-safe: an atomic exchange and clock_gettime.
void MarkRequested() {
  if (g_shutdown.exchange(true)) return;
  timespec now = {};
  clock_gettime(CLOCK_REALTIME, &now);
  g_requested_at_ns.store(static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec);
}

void OnSignal(int) { MarkRequested(); }

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

void RequestShutdown() { MarkRequested(); }

absl::Time ShutdownRequestedAt() {
  const int64_t ns = g_requested_at_ns.load();
  return ns == 0 ? absl::InfinitePast() : absl::FromUnixNanos(ns);
}

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
