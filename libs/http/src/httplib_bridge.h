// httplib's request parsing, routing and reply writing, run over a Connection that this library
// accepted and read the head of itself. httplib's own accept loop and keep-alive loop are not
// used: they give a connection a worker thread before its head has arrived and bound each read,
// not the whole request, which lets slow clients hold every thread.
#pragma once

#include <httplib.h>

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "connection.h"

namespace gradsync::http {

// One request's view of a Connection for httplib. Until StartBody() the request head is read
// from the buffer only (the Acceptor buffered all of it), so parsing it never waits on the
// peer; after it, the body is read and the reply written each within `io_timeout` in total.
class RequestStream final : public httplib::Stream {
 public:
  RequestStream(Connection& connection, absl::Duration io_timeout) : c_(connection), io_timeout_(io_timeout) {}

  // The head is parsed: reads may wait on the socket from now on.
  void StartBody();
  // Whether another request may follow on the connection: the head was parsed and no read of
  // the body failed or ran past its deadline, so the next byte buffered starts the next request.
  bool reusable() const { return read_deadline_.has_value() && !read_failed_; }

  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return c_.fd(); }

 private:
  Connection& c_;
  const absl::Duration io_timeout_;
  std::optional<absl::Time> read_deadline_;   // set by StartBody()
  std::optional<absl::Time> write_deadline_;  // set by the first write
  bool read_failed_ = false;
};

// httplib::Server configured as usual (routes, error and exception handlers, payload limit),
// serving requests one at a time from connections handed to it.
class RequestServer final : public httplib::Server {
 public:
  // Serves the request whose head `stream`'s connection has buffered. `last` makes the reply
  // close the connection. True when the connection may carry another request: not after a
  // head httplib refused (400, 414, 416) or a body that did not arrive in time, whose unread
  // rest would be taken for the next request.
  bool ServeOne(RequestStream& stream, bool last);

  // The listening socket bind_to_port() opened, owned by the caller from now on.
  socket_t TakeListeningSocket() { return svr_sock_.exchange(INVALID_SOCKET); }
};

}  // namespace gradsync::http
