// The thread that accepts a Server's connections and reads their requests. A worker thread is
// given a connection only once its whole request has arrived (the TLS handshake, request line and
// headers, and a body announced by a Content-Length within the body limit), so clients that send
// slowly, or nothing, hold no worker: they wait here, in one poll() over every such connection,
// until their deadline (header_timeout, plus time for the body at kMinBodyRate).
//
// Lifecycle of a connection: accepted (or refused at once when over a ConnectionLimits limit),
// head read here within `header_timeout` (else closed, with a 408 when part of a head came; a
// head over `max_head_bytes` gets 431), handed to `dispatch`, served by a worker, and, when kept alive, handed back by
// Return() to wait here for its next head under a fresh deadline.
#pragma once

#include <openssl/ssl.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "connection.h"
#include "connection_limits.h"

namespace gradsync::http {

// The slowest a body may arrive: past header_timeout, a request gets a second per this many bytes.
inline constexpr size_t kMinBodyRate = 64 << 10;

struct AcceptorOptions {
  absl::Duration header_timeout = absl::Seconds(10);
  size_t max_head_bytes = 64 << 10;
  // A body of at most this many bytes (by its Content-Length) is buffered here too, before the
  // request reaches a worker, within header_timeout plus a second for each kMinBodyRate bytes.
  size_t max_body_bytes = 1 << 20;
  // When set, a request head that announces a body and is not admitted is answered 401 and its
  // connection closed, before any of the body is read (Connection::ReadRequest).
  Connection::AdmitBody admit_body;
  SSL_CTX* tls = nullptr;              // TLS when set; not owned, outlives the Acceptor
  ConnectionLimits* limits = nullptr;  // not owned, outlives the Acceptor
  // The bytes of a complete HTTP reply refusing a connection (status, why), sent before it is
  // closed.
  std::function<std::string(int status, const std::string& message)> refusal;
  // Takes a connection whose next request head is buffered. Runs on the acceptor's thread: it
  // must only queue the connection, never serve it.
  std::function<void(std::unique_ptr<Connection>)> dispatch;
};

class Acceptor {
 public:
  // Takes ownership of the bound, listening socket `listen_fd`. INTERNAL when the thread's
  // wake-up descriptor cannot be made.
  static absl::StatusOr<std::unique_ptr<Acceptor>> Create(int listen_fd, AcceptorOptions options);
  // Stop().
  ~Acceptor();

  // Starts accepting on a thread of its own. Apart from Create, so that whatever `dispatch`
  // leads to (a worker calling Return()) can already reach this Acceptor.
  void Start();

  // A kept-alive connection whose reply is sent: waits here for its next head. Thread-safe;
  // after Stop() the connection is closed instead.
  void Return(std::unique_ptr<Connection> connection);
  // Stops accepting, closes the listening socket and every connection still waiting for its
  // head, and joins the thread. Idempotent; not concurrently with itself.
  void Stop();

 private:
  struct Waiting {
    std::unique_ptr<Connection> connection;
    absl::Time deadline;
    bool body_time_given = false;  // the deadline was extended for the body announced
  };

  Acceptor(int listen_fd, int wake_fd, AcceptorOptions options);
  void Run();
  // Moves returned connections into `waiting`; false once stopping.
  bool TakeReturned(std::vector<Waiting>& waiting);
  void AcceptAll(std::vector<Waiting>& waiting);
  // Reads what has arrived; false when the connection is no longer waiting (dispatched or closed).
  bool Advance(Waiting& w);
  // Closes a connection waiting for its head, telling it why when it has sent part of one.
  void Refuse(Waiting& w, int status, const std::string& message);

  int listen_fd_;  // -1 once closed
  const int wake_fd_;
  const AcceptorOptions options_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<Connection>> returned_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace gradsync::http
