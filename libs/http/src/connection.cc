#include "connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/clock.h"

namespace gradsync::http {
namespace {

constexpr char kHeadEnd[] = "\r\n\r\n";
constexpr size_t kHeadEndSize = sizeof(kHeadEnd) - 1;
constexpr size_t kChunk = 16 << 10;

// Waits until `fd` is ready for `events`; false once `deadline` has passed first.
bool WaitFor(int fd, short events, absl::Time deadline) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    pollfd p{fd, events, 0};
    const int64_t ms = std::min<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), INT_MAX);
    const int ready = ::poll(&p, 1, static_cast<int>(ms));
    // Ready, or an error or hang-up that the next read or write reports.
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

int ClampToInt(size_t n) { return static_cast<int>(std::min<size_t>(n, INT_MAX)); }

}  // namespace

Connection::Connection(int fd, std::string client, Admission admission, SSL_CTX* tls)
    : fd_(fd), client_(std::move(client)), admission_(std::move(admission)), wanted_events_(POLLIN) {
  if (tls == nullptr) return;
  ssl_ = SSL_new(tls);
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    tls_failed_ = true;
    return;
  }
  SSL_set_accept_state(ssl_);
}

Connection::~Connection() {
  if (ssl_ != nullptr) {
    if (!tls_failed_ && SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);  // close_notify, best effort
    SSL_free(ssl_);
    ERR_clear_error();
  }
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
}

Connection::Io Connection::SslOutcome(int result) {
  const int error = SSL_get_error(ssl_, result);
  ERR_clear_error();  // the queue is per thread: leave nothing for the next connection served here
  if (error == SSL_ERROR_WANT_READ) return Io{0, POLLIN};
  if (error == SSL_ERROR_WANT_WRITE) return Io{0, POLLOUT};
  tls_failed_ = error != SSL_ERROR_ZERO_RETURN;
  return Io{0, 0, true};
}

Connection::Io Connection::RecvOnce(char* out, size_t n) {
  if (tls_failed_) return Io{0, 0, true};
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int got = SSL_read(ssl_, out, ClampToInt(n));  // handshakes first while it is due
    return got > 0 ? Io{got} : SslOutcome(got);
  }
  for (;;) {
    const ssize_t got = ::recv(fd_, out, n, 0);
    if (got > 0) return Io{got};
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io{0, POLLIN};
    return Io{0, 0, true};
  }
}

Connection::Io Connection::SendOnce(const char* data, size_t n) {
  if (tls_failed_) return Io{0, 0, true};
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const int put = SSL_write(ssl_, data, ClampToInt(n));
    return put > 0 ? Io{put} : SslOutcome(put);
  }
  for (;;) {
    const ssize_t put = ::send(fd_, data, n, MSG_NOSIGNAL);
    if (put > 0) return Io{put};
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io{0, POLLOUT};
    return Io{0, 0, true};
  }
}

Connection::Head Connection::ReadRequest(size_t max_head, size_t max_body, const AdmitBody& admit_body) {
  if (pos_ > 0) {  // drop the requests already served
    in_.erase(0, pos_);
    scanned_ = scanned_ > pos_ ? scanned_ - pos_ : 0;
    pos_ = 0;
    head_bytes_ = 0;
    body_expected_ = 0;
  }
  char buf[kChunk];
  for (;;) {
    if (head_bytes_ == 0) {
      if (const size_t end = in_.find(kHeadEnd, scanned_); end != std::string::npos) {
        head_bytes_ = end + kHeadEndSize;
        if (!BodyAdmitted(admit_body)) return Head::kBodyRefused;
        if (!ExpectBody(max_body)) return Head::kComplete;
      } else {
        scanned_ = in_.size() >= kHeadEndSize ? in_.size() - (kHeadEndSize - 1) : 0;
        if (in_.size() >= max_head) return Head::kTooLarge;
      }
    }
    if (head_bytes_ > 0 && in_.size() >= head_bytes_ + body_expected_) return Head::kComplete;
    const size_t limit = head_bytes_ > 0 ? head_bytes_ + static_cast<size_t>(body_expected_) : max_head;
    const Io io = RecvOnce(buf, std::min(sizeof(buf), limit - in_.size()));
    if (io.bytes > 0) {
      in_.append(buf, static_cast<size_t>(io.bytes));
      continue;
    }
    if (io.closed) return Head::kClosed;
    wanted_events_ = io.wait;
    return Head::kWaiting;
  }
}

namespace {

// The value of header `name` (lowercase) in `head` (request line and headers, CRLF-separated),
// and where its line starts and ends; nullopt when absent or given twice.
struct HeaderLine {
  std::string value;
  size_t begin = 0, end = 0;
};
std::optional<HeaderLine> FindHeader(const std::string& head, absl::string_view name) {
  std::optional<HeaderLine> found;
  for (size_t begin = head.find("\r\n") + 2; begin < head.size();) {
    const size_t end = head.find("\r\n", begin);
    if (end == std::string::npos || end == begin) break;
    const absl::string_view line(head.data() + begin, end - begin);
    const size_t colon = line.find(':');
    if (colon != absl::string_view::npos && absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(line.substr(0, colon)), name)) {
      if (found.has_value()) return std::nullopt;
      found = HeaderLine{std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))), begin, end + 2};
    }
    begin = end + 2;
  }
  return found;
}

}  // namespace

bool Connection::BodyAdmitted(const AdmitBody& admit_body) const {
  if (admit_body == nullptr) return true;
  const std::string head = in_.substr(0, head_bytes_);
  const std::optional<HeaderLine> length = FindHeader(head, "content-length");
  uint64_t bytes = 0;
  // A length that does not parse is refused later as malformed; for now it may be a body.
  const bool body = FindHeader(head, "transfer-encoding").has_value() ||
                    (length.has_value() && (!absl::SimpleAtoi(length->value, &bytes) || bytes > 0));
  if (!body) return true;
  const std::optional<HeaderLine> authorization = FindHeader(head, "authorization");
  return admit_body(authorization.has_value() ? authorization->value : "");
}

bool Connection::ExpectBody(size_t max_body) {
  const std::string head = in_.substr(0, head_bytes_);
  if (FindHeader(head, "transfer-encoding").has_value()) return false;  // chunked: read by the worker
  const std::optional<HeaderLine> length = FindHeader(head, "content-length");
  uint64_t bytes = 0;
  if (!length.has_value() || !absl::SimpleAtoi(length->value, &bytes) || bytes == 0 || bytes > max_body) return false;
  if (const std::optional<HeaderLine> expect = FindHeader(head, "expect");
      expect.has_value() && absl::EqualsIgnoreCase(expect->value, "100-continue")) {
    // Answered here, so the client sends its body now; the line goes, so it is not answered twice.
    TrySend("HTTP/1.1 100 Continue\r\n\r\n");
    in_.erase(expect->begin, expect->end - expect->begin);
    head_bytes_ -= expect->end - expect->begin;
  }
  body_expected_ = bytes;
  return true;
}

size_t Connection::ReadBuffered(char* out, size_t n) {
  const size_t k = std::min(n, in_.size() - pos_);
  std::copy_n(in_.data() + pos_, k, out);
  pos_ += k;
  if (pos_ == in_.size()) {
    in_.clear();
    pos_ = scanned_ = head_bytes_ = 0;
    body_expected_ = 0;
  }
  return k;
}

int Connection::Fill(absl::Time deadline) {
  char buf[kChunk];
  for (;;) {
    const Io io = RecvOnce(buf, sizeof(buf));
    if (io.bytes > 0) {
      in_.append(buf, static_cast<size_t>(io.bytes));
      return 1;
    }
    if (io.closed) return 0;
    if (!WaitFor(fd_, io.wait, deadline)) return -1;
  }
}

ssize_t Connection::Read(char* out, size_t n, absl::Time deadline) {
  if (pos_ == in_.size()) {
    const int filled = Fill(deadline);
    if (filled <= 0) return filled;
  }
  return static_cast<ssize_t>(ReadBuffered(out, n));
}

ssize_t Connection::Write(const char* data, size_t n, absl::Time deadline) {
  for (size_t done = 0; done < n;) {
    const Io io = SendOnce(data + done, n - done);
    if (io.bytes > 0) {
      done += static_cast<size_t>(io.bytes);
      continue;
    }
    if (io.closed || !WaitFor(fd_, io.wait, deadline)) return -1;
  }
  return static_cast<ssize_t>(n);
}

void Connection::DrainSome() {
  char sink[kChunk];
  for (int i = 0; i < 4 && RecvOnce(sink, sizeof(sink)).bytes > 0; ++i) {
  }
}

void Connection::TrySend(absl::string_view bytes) {
  if (ssl_ != nullptr && !SSL_is_init_finished(ssl_)) return;  // nothing can be said before the handshake
  while (!bytes.empty()) {
    const Io io = SendOnce(bytes.data(), bytes.size());
    if (io.bytes <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(io.bytes));
  }
}

bool SocketAddress(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* raw = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, raw, &len) : ::getsockname(fd, raw, &len)) != 0) return false;
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    port = ntohs(v4.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(addr);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      ::inet_ntop(AF_INET, &v6.sin6_addr.s6_addr[12], text, sizeof(text));
    } else {
      ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
    }
    port = ntohs(v6.sin6_port);
  } else {
    return false;
  }
  ip = text;
  return true;
}

}  // namespace gradsync::http
