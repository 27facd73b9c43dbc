#include "acceptor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync::http {
namespace {

// Connections accepted per wake-up before the waiting ones get their turn again.
constexpr int kAcceptBurst = 64;

int PollTimeoutMs(absl::Time next) {
  if (next == absl::InfiniteFuture()) return -1;
  const absl::Duration left = std::max(next - absl::Now(), absl::ZeroDuration());
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), INT_MAX));
}

// Closes a connection refused before it was ever read from. Plain HTTP gets `reply` first; its
// pending input is read away so that closing sends FIN, not a reset that could destroy the reply.
void RefuseAtAccept(int fd, const std::string& reply) {
  if (!reply.empty()) {
    (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    char sink[4096];
    for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
    }
  }
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Acceptor>> Acceptor::Create(int listen_fd, AcceptorOptions options) {
  const int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    ::close(listen_fd);
    return absl::InternalError(absl::StrCat("HTTP acceptor: eventfd: ", std::strerror(errno)));
  }
  // httplib listens with a backlog of 5; connections are accepted at once here, and refused at
  // once when over a limit, so a larger backlog only absorbs bursts.
  ::listen(listen_fd, SOMAXCONN);
  ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  return std::unique_ptr<Acceptor>(new Acceptor(listen_fd, wake_fd, std::move(options)));
}

void Acceptor::Start() {
  thread_ = std::thread([this] { Run(); });
}

Acceptor::Acceptor(int listen_fd, int wake_fd, AcceptorOptions options)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), options_(std::move(options)) {}

Acceptor::~Acceptor() {
  Stop();
  ::close(wake_fd_);
}

void Acceptor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(std::exchange(listen_fd_, -1));
}

void Acceptor::Return(std::unique_ptr<Connection> connection) {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;  // `connection` closes on the way out
    returned_.push_back(std::move(connection));
  }
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof(one));
}

bool Acceptor::TakeReturned(std::vector<Waiting>& waiting) {
  std::vector<std::unique_ptr<Connection>> returned;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    returned.swap(returned_);
  }
  for (std::unique_ptr<Connection>& c : returned) {
    Waiting w{std::move(c), absl::Now() + options_.header_timeout, false};
    // A pipelined next request may be buffered already: the socket need not become readable.
    if (Advance(w)) waiting.push_back(std::move(w));
  }
  return true;
}

void Acceptor::Run() {
  std::vector<Waiting> waiting;
  std::vector<pollfd> fds;
  while (TakeReturned(waiting)) {
    fds.assign({pollfd{wake_fd_, POLLIN, 0}, pollfd{listen_fd_, POLLIN, 0}});
    absl::Time next = absl::InfiniteFuture();
    for (const Waiting& w : waiting) {
      fds.push_back(pollfd{w.connection->fd(), w.connection->wanted_events(), 0});
      next = std::min(next, w.deadline);
    }
    if (::poll(fds.data(), fds.size(), PollTimeoutMs(next)) < 0 && errno != EINTR) break;
    uint64_t wakes;
    if (fds[0].revents != 0) (void)::read(wake_fd_, &wakes, sizeof(wakes));
    const absl::Time now = absl::Now();
    for (size_t i = 0; i < waiting.size(); ++i) {
      Waiting& w = waiting[i];
      if (fds[i + 2].revents != 0 && !Advance(w)) continue;
      if (now >= w.deadline) {
        Refuse(w, 408,
               w.connection->body_expected() > 0
                   ? absl::StrCat("no complete request body of ", w.connection->body_expected(), " bytes in time")
                   : absl::StrCat("no complete request head within ", absl::FormatDuration(options_.header_timeout)));
      }
    }
    waiting.erase(
        std::remove_if(waiting.begin(), waiting.end(), [](const Waiting& w) { return w.connection == nullptr; }),
        waiting.end());
    if (fds[1].revents != 0) AcceptAll(waiting);
  }
  waiting.clear();
}

void Acceptor::AcceptAll(std::vector<Waiting>& waiting) {
  for (int i = 0; i < kAcceptBurst; ++i) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the pending connection stays queued, and retrying at once would spin.
      if (errno == EMFILE || errno == ENFILE) absl::SleepFor(absl::Milliseconds(10));
      return;
    }
    std::string client;
    int port = 0;
    if (!SocketAddress(fd, /*peer=*/true, client, port)) {
      RefuseAtAccept(fd, "");
      continue;
    }
    absl::StatusOr<Admission> admission = options_.limits->Admit(client);
    if (!admission.ok()) {
      RefuseAtAccept(fd,
                     options_.tls != nullptr ? "" : options_.refusal(503, std::string(admission.status().message())));
      continue;
    }
    Waiting w{std::make_unique<Connection>(fd, std::move(client), *std::move(admission), options_.tls),
              absl::Now() + options_.header_timeout, false};
    if (Advance(w)) waiting.push_back(std::move(w));
  }
}

bool Acceptor::Advance(Waiting& w) {
  switch (w.connection->ReadRequest(options_.max_head_bytes, options_.max_body_bytes, options_.admit_body)) {
    case Connection::Head::kWaiting:
      if (!w.body_time_given && w.connection->body_expected() > 0) {
        w.body_time_given = true;
        w.deadline += absl::Seconds(static_cast<double>(w.connection->body_expected()) / kMinBodyRate);
      }
      return true;
    case Connection::Head::kComplete: options_.dispatch(std::move(w.connection)); return false;
    case Connection::Head::kTooLarge:
      Refuse(w, 431, absl::StrCat("the request head exceeds ", options_.max_head_bytes, " bytes"));
      return false;
    case Connection::Head::kBodyRefused:
      w.connection->TrySend(options_.refusal(401, "a request with a body must carry the bearer token in its head"));
      w.connection->DrainSome();
      w.connection.reset();
      return false;
    case Connection::Head::kClosed: w.connection.reset(); return false;
  }
  return false;
}

void Acceptor::Refuse(Waiting& w, int status, const std::string& message) {
  // A connection idle between requests, or silent since it was accepted, is closed without a
  // word: a reply there could be taken for the answer to a request crossing it on the wire.
  if (!w.connection->buffered().empty()) w.connection->TrySend(options_.refusal(status, message));
  w.connection.reset();
}

}  // namespace gradsync::http
