// Process-wide shutdown on SIGINT or SIGTERM, for service mains.
#pragma once

#include "absl/time/time.h"

namespace gradsync {

// Installs handlers for SIGINT and SIGTERM that request shutdown. Call once, from main.
void InstallShutdownHandlers();

// True once a signal arrived (or RequestShutdown was called).
bool ShutdownRequested();

void RequestShutdown();

// When the first signal arrived (or RequestShutdown was first called); InfinitePast() before.
absl::Time ShutdownRequestedAt();

// Blocks until shutdown is requested or `timeout` passes; returns ShutdownRequested().
bool WaitForShutdown(absl::Duration timeout = absl::InfiniteDuration());

}  // namespace gradsync
