#include "raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync::http::testing {
namespace {

sockaddr_in Loopback(const std::string& ip, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  return addr;
}

}  // namespace

RawClient::RawClient(int port, const std::string& source) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
  const sockaddr_in from = Loopback(source, 0);
  const sockaddr_in to = Loopback("127.0.0.1", port);
  connected_ = ::bind(fd_, reinterpret_cast<const sockaddr*>(&from), sizeof(from)) == 0 &&
               ::connect(fd_, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) == 0;
}

RawClient::~RawClient() { ::close(fd_); }

bool RawClient::Send(absl::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool RawClient::StillWaiting() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

RawClient::Received RawClient::ReadUntilClosed(absl::Duration timeout) {
  Received r;
  const absl::Time deadline = absl::Now() + timeout;
  for (absl::Time now = absl::Now(); now < deadline; now = absl::Now()) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(deadline - now)) + 1) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {  // end of stream, or reset: either way the server let go
      r.closed = true;
      break;
    }
    r.bytes.append(buf, static_cast<size_t>(n));
  }
  return r;
}

Reply RequestWithin(int port, absl::string_view method, absl::string_view path, absl::Duration timeout,
                    const std::string& source, absl::string_view body) {
  RawClient client(port, source);
  Reply reply;
  if (!client.connected()) return reply;
  client.Send(absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n",
                           "Content-Length: ", body.size(), "\r\n\r\n", body));
  const RawClient::Received r = client.ReadUntilClosed(timeout);
  const size_t space = r.bytes.find(' ');
  const size_t head_end = r.bytes.find("\r\n\r\n");
  if (!r.closed || space == std::string::npos || head_end == std::string::npos ||
      !absl::SimpleAtoi(r.bytes.substr(space + 1, 3), &reply.status)) {
    return Reply{};
  }
  reply.body = r.bytes.substr(head_end + 4);
  return reply;
}

Trickler::Trickler(int port, int clients, absl::string_view head) : closed_(clients) {
  for (int i = 0; i < clients; ++i) {
    clients_.push_back(std::make_unique<RawClient>(port));
    clients_.back()->Send(head);
  }
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      for (size_t i = 0; i < clients_.size(); ++i) {
        if (!closed_[i].load() && !clients_[i]->Send("a")) closed_[i].store(true);
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
}

Trickler::~Trickler() {
  stop_.store(true);
  thread_.join();
}

}  // namespace gradsync::http::testing
