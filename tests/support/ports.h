// Loopback ports for tests.
#pragma once

namespace gradsync::testing {

// A TCP port on 127.0.0.1 that nothing listened on a moment ago (the kernel's choice, bound and
// released): for a server that must come back on the same port, or a client with no server.
int FreePort();

}  // namespace gradsync::testing
