// Secure defaults for the sockets a service listens on: one reachable beyond this machine's
// loopback serves only with the tokens that guard it, unless the operator opts out (--insecure).
// Loopback (127.0.0.0/8, ::1, localhost) is reachable by this machine's users alone; every other
// address (all interfaces: 0.0.0.0, ::, ":port"; an interface's address; any other host name) is
// "beyond loopback".
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace gradsync {

// True when `address` ("host:port", "[v6]:port" or a bare host) binds loopback only.
bool IsLoopbackListen(std::string_view address);

// One listening flag of a service and the token flags that guard what it serves.
struct GuardedListen {
  std::string flag;     // "--listen"
  std::string address;  // the flag's value; empty: the service does not listen there
  // Each token flag the listener needs, and whether it is set.
  std::vector<std::pair<std::string, bool>> tokens;
};

// OK when every listener is off, on loopback, or has all its tokens. Otherwise
// FAILED_PRECONDITION naming each listener beyond loopback with the token flags it lacks, and the
// ways out: the tokens, a loopback address, or --insecure. With `insecure` it returns OK, and
// logs a warning on every call (every start), naming each listener that serves unguarded.
absl::Status CheckListenersGuarded(const std::vector<GuardedListen>& listeners, bool insecure);

}  // namespace gradsync
