#include "http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync::metrics::testing {
namespace {

// Closes the socket on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(const std::string& host_port, const std::string& path) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError(absl::StrCat("not host:port: ", host_port));
  }
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: ", host_port));
  }
  Fd fd(socket(AF_INET, SOCK_STREAM, 0));
  if (fd.get() < 0 || connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError(absl::StrCat("connect ", host_port, ": ", std::strerror(errno)));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host_port, "\r\n\r\n");
  if (send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    return absl::UnavailableError(absl::StrCat("send to ", host_port, ": ", std::strerror(errno)));
  }
  std::string raw;
  char buf[16384];
  for (ssize_t n; (n = recv(fd.get(), buf, sizeof(buf), 0)) > 0;) raw.append(buf, static_cast<size_t>(n));

  // "HTTP/1.x NNN reason\r\n headers \r\n\r\n body"
  const size_t header_end = raw.find("\r\n\r\n");
  HttpResponse response;
  if (raw.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos || raw.size() < 12 ||
      !absl::SimpleAtoi(raw.substr(9, 3), &response.status)) {
    return absl::InternalError(absl::StrCat("not an HTTP response from ", host_port, ": ", raw.substr(0, 80)));
  }
  response.body = raw.substr(header_end + 4);
  return response;
}

}  // namespace gradsync::metrics::testing
