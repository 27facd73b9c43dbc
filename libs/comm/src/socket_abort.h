// Ends a Gloo context's TCP connections from this side. Private to libs/comm.
//
// An abort must wake every wait of a collective in flight, but Gloo's algorithms wait on scratch
// buffers of their own (the ring all-reduce receives into one), which abortWaitRecv() on the
// caller's buffers cannot reach, and Gloo's TCP pairs keep their sockets private. Shutting a
// pair's socket down (shutdown(2), SHUT_RDWR) makes Gloo's event loop read end-of-file on it and
// fail every operation pending on that pair, as when the peer closes; the descriptor itself stays
// Gloo's to close. A peer that is unreachable, frozen or partitioned never closes, so without
// this a survivor waits out the collective timeout.
#pragma once

#include <memory>

namespace gloo {
class Context;
}

namespace gradsync::comm::internal {

// Shuts down the socket of every connected pair of `context` (all ranks but its own). Returns how
// many sockets it shut down. Safe to call from any thread while a collective runs, and more than
// once.
int ShutdownPairSockets(const std::shared_ptr<gloo::Context>& context);

}  // namespace gradsync::comm::internal
