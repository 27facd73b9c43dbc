// One accepted TCP connection, plain or TLS, with the bytes read from it and not yet consumed.
//
// The socket is non-blocking throughout. The Acceptor reads a request with ReadRequest(),
// which never waits; a worker then reads the body and writes the reply with Read()/Write(), which
// wait in poll() but never past the deadline they are given. A deadline is a total: a peer that
// trickles one byte at a time gets no more time than one that sends nothing.
#pragma once

#include <openssl/ssl.h>
#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "connection_limits.h"

namespace gradsync::http {

class Connection {
 public:
  // Owns `fd` (non-blocking) and its place in the limits. With `tls` the connection is the
  // server end of a TLS session whose handshake happens within the first reads; when no session
  // can be made, the connection reads as closed.
  Connection(int fd, std::string client, Admission admission, SSL_CTX* tls);
  ~Connection();  // shuts the socket down and closes it
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const { return fd_; }
  const std::string& client() const { return client_; }

  enum class Head { kWaiting, kComplete, kClosed, kTooLarge, kBodyRefused };
  // Asked about a complete head that announces a body, with the value of its Authorization header
  // ("" when absent or given twice): whether its body may be read at all.
  using AdmitBody = std::function<bool(const std::string& authorization)>;
  // Reads whatever has arrived, without waiting, until the next request is complete: its head (up
  // to its blank line) and, when the head gives a Content-Length of at most `max_body`, its whole
  // body. kTooLarge when `max_head` bytes are buffered without a head. A body over `max_body`, or
  // one sent chunked, completes with the head (the server refuses the first, and reads the
  // second on a worker within its io_timeout). A head asking for "100 Continue" is answered here,
  // and the Expect line taken out, so the body can come without a worker. With `admit_body`, a head
  // that announces a body (a Content-Length above 0, or a Transfer-Encoding) and is not admitted
  // gives kBodyRefused before a byte of its body is buffered or 100 Continue is sent.
  Head ReadRequest(size_t max_head, size_t max_body, const AdmitBody& admit_body = nullptr);
  // The body length the request being read announced, once its head is in (0 before, or for one
  // without a body to wait for).
  uint64_t body_expected() const { return body_expected_; }
  // POLLIN, or POLLOUT while the TLS layer must write before it can read on.
  short wanted_events() const { return wanted_events_; }

  // The unconsumed buffered bytes: from the start of the next request once ReadRequest said kComplete.
  absl::string_view buffered() const { return absl::string_view(in_).substr(pos_); }
  // Copies up to `n` buffered bytes without touching the socket; 0 when none are left.
  size_t ReadBuffered(char* out, size_t n);
  // Buffered bytes first, then the socket, waiting until `deadline`. > 0 bytes; 0 at the end of
  // the stream; -1 on an error or when the deadline passed.
  ssize_t Read(char* out, size_t n, absl::Time deadline);
  // Writes all `n` bytes, waiting until `deadline`: n, or -1 on an error or the deadline.
  ssize_t Write(const char* data, size_t n, absl::Time deadline);
  // Best effort and never waits: for a refusal sent just before closing.
  void TrySend(absl::string_view bytes);
  // Reads away, without waiting, a little of what the peer has sent (at most 64 KiB), so that
  // closing after a refusal sends FIN rather than a reset that could destroy the refusal.
  void DrainSome();

  // Requests served on this connection so far.
  int served() const { return served_; }
  void CountServed() { ++served_; }

 private:
  // One non-blocking read or write: bytes moved, or why none were.
  struct Io {
    ssize_t bytes = 0;  // > 0: moved
    short wait = 0;     // POLLIN or POLLOUT: try again once the socket is ready so
    bool closed = false;
  };
  Io RecvOnce(char* out, size_t n);
  Io SendOnce(const char* data, size_t n);
  Io SslOutcome(int result);
  // The request head in in_[0, head_bytes_) is complete: whether a body of at most `max_body`
  // bytes is to be buffered before it is served (setting body_expected_).
  bool ExpectBody(size_t max_body);
  // Whether the complete head in in_[0, head_bytes_) may go on to its body under `admit_body`.
  bool BodyAdmitted(const AdmitBody& admit_body) const;
  // Appends at least one byte read from the socket to the buffer, waiting until `deadline`.
  // 1 when bytes came, 0 at the end of the stream, -1 on an error or the deadline.
  int Fill(absl::Time deadline);

  int fd_;
  std::string client_;
  Admission admission_;
  SSL* ssl_ = nullptr;
  std::string in_;
  size_t pos_ = 0;           // in_[pos_, end) is not yet consumed
  size_t scanned_ = 0;       // in_[pos_, scanned_) holds no head end
  size_t head_bytes_ = 0;    // the request being read: its head's length once complete, else 0
  uint64_t body_expected_ = 0;
  bool tls_failed_ = false;  // no session, or a fatal TLS error: no close_notify is sent
  short wanted_events_;
  int served_ = 0;
};

// The IP address and port of the socket's peer (`peer`) or its own end, as text; IPv4 addresses
// mapped into IPv6 are written as IPv4. False when the socket has no address.
bool SocketAddress(int fd, bool peer, std::string& ip, int& port);

}  // namespace gradsync::http
