// Slow and greedy clients against libs/http's Server over real sockets: request heads and bodies
// trickled a byte at a time, connections that never send anything, one address opening too many,
// and every thread busy while a liveness probe comes in.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gradsync/http/server.h"
#include "gtest/gtest.h"
#include "raw_client.h"

namespace gradsync::http {
namespace {

using testing::RawClient;
using testing::RequestWithin;
using testing::Trickler;

// Generous for two busy cores; the old server never answered at all.
constexpr absl::Duration kPatience = absl::Seconds(15);
// A head that is never finished: the header value grows one byte at a time.
constexpr char kEndlessHead[] = "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";

Reply Ok(const Request& r) { return Reply{200, "ok " + r.path, "text/plain", {}}; }

std::unique_ptr<Server> StartOrDie(ServerOptions options, Handler handler = Ok) {
  options.listen = "127.0.0.1:0";
  options.name = "test";
  auto s = Server::Start(std::move(options), std::move(handler));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

TEST(SlowClients, MoreTricklingClientsThanThreadsDoNotStarveHealthz) {
  ServerOptions o;
  o.threads = 2;
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  Trickler slow(server->port(), 3 * o.threads, kEndlessHead);
  const testing::Reply r = RequestWithin(server->port(), "GET", "/healthz", kPatience);
  EXPECT_EQ(r.status, 200) << "no answer while slow clients hold their connections";
  EXPECT_EQ(r.body, "ok /healthz");
  // Not only the priority path: an ordinary route gets a thread as well.
  EXPECT_EQ(RequestWithin(server->port(), "GET", "/v1/jobs", kPatience).status, 200);
}

TEST(SlowClients, ATricklingHeadIsCutOffAtItsDeadlineAndASilentConnectionToo) {
  ServerOptions o;
  o.header_timeout = absl::Seconds(1);
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  Trickler slow(server->port(), 1, kEndlessHead);
  RawClient silent(server->port());
  ASSERT_TRUE(silent.connected());
  // Each byte arrives well within any per-read timeout; only a total deadline ends this.
  const RawClient::Received trickled = slow.client(0).ReadUntilClosed(kPatience);
  EXPECT_TRUE(trickled.closed) << "the trickling connection is still open";
  EXPECT_TRUE(absl::StartsWith(trickled.bytes, "HTTP/1.1 408 ")) << trickled.bytes;
  EXPECT_TRUE(absl::StrContains(trickled.bytes, "no complete request head within 1s")) << trickled.bytes;
  const RawClient::Received nothing = silent.ReadUntilClosed(kPatience);
  EXPECT_TRUE(nothing.closed);
  EXPECT_EQ(nothing.bytes, "") << "a connection that sent nothing is closed without a reply";
}

// A body is buffered before the request reaches a worker: trickled, it holds no thread, and it is
// cut off at the head's deadline plus a second per 64 KiB it announced.
TEST(SlowClients, ATrickledBodyIsCutOffAtItsDeadlineHoldingNoThread) {
  ServerOptions o;
  o.header_timeout = absl::Seconds(1);
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  Trickler slow(server->port(), 1, "POST /p HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n");
  const absl::Time start = absl::Now();
  const RawClient::Received r = slow.client(0).ReadUntilClosed(kPatience);
  EXPECT_TRUE(r.closed) << "the trickled body is still being waited for";
  EXPECT_LT(absl::Now() - start, absl::Seconds(8));
  EXPECT_TRUE(absl::StartsWith(r.bytes, "HTTP/1.1 408 ")) << r.bytes;
  EXPECT_TRUE(absl::StrContains(r.bytes, "no complete request body of 100000 bytes in time")) << r.bytes;
}

// Many unauthenticated clients trickling bodies (12 against 2 threads) once held every thread for
// the whole io_timeout, answering an authorised request about once in 30 s: now none of them
// holds a thread, and a request with a body is answered at once beside them.
TEST(SlowClients, TrickledBodiesDoNotStarveTheOtherRequests) {
  ServerOptions o;
  o.threads = 2;
  auto server = StartOrDie(o, [](const Request& r) { return Reply{200, absl::StrCat("got ", r.body.size()), "text/plain", {}}; });
  ASSERT_NE(server, nullptr);
  Trickler slow(server->port(), 12, "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n");
  absl::SleepFor(absl::Milliseconds(300));
  for (int i = 0; i < 5; ++i) {
    const absl::Time start = absl::Now();
    const testing::Reply r = RequestWithin(server->port(), "GET", "/v1/jobs", kPatience);
    EXPECT_EQ(r.status, 200);
    EXPECT_LT(absl::Now() - start, absl::Seconds(2)) << "request " << i << " waited for a thread";
  }
}

// With body_auth, the token is checked on the head: a client without it never has a byte of its
// body read (not buffered, no 100 Continue, no thread), and learns so at once instead of after the
// body's deadline. Bodies with the token, and requests without a body, go on as before.
TEST(BodyAuth, ABodyWithoutTheTokenIsRefusedAtItsHeadBeforeAByteOfItIsRead) {
  constexpr char kToken[] = "body-auth-token-of-this-test";
  ServerOptions o;
  o.body_auth = TokenAuth(kToken);
  std::atomic<int> served{0};
  auto server = StartOrDie(o, [&served](const Request& r) {
    ++served;
    return Reply{200, absl::StrCat("got ", r.body.size()), "text/plain", {}};
  });
  ASSERT_NE(server, nullptr);
  const std::string post = "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const std::string& announce : {std::string("Content-Length: 100000\r\n"),
                                      std::string("Content-Length: 100000\r\nExpect: 100-continue\r\n"),
                                      std::string("Transfer-Encoding: chunked\r\n"),
                                      std::string("Content-Length: 100000\r\nAuthorization: Bearer wrong-token-0123456\r\n")}) {
    RawClient client(server->port());
    ASSERT_TRUE(client.connected());
    const absl::Time start = absl::Now();
    client.Send(absl::StrCat(post, announce, "\r\n"));  // the head only: the body never comes
    const RawClient::Received r = client.ReadUntilClosed(kPatience);
    EXPECT_LT(absl::Now() - start, absl::Seconds(3)) << announce << ": waited for the body";
    EXPECT_TRUE(r.closed) << announce;
    EXPECT_TRUE(absl::StartsWith(r.bytes, "HTTP/1.1 401 ")) << announce << r.bytes;
    EXPECT_FALSE(absl::StrContains(r.bytes, "100 Continue")) << announce << r.bytes;
    EXPECT_TRUE(absl::StrContains(r.bytes, "must carry the bearer token")) << r.bytes;
  }
  EXPECT_EQ(served.load(), 0) << "an unauthenticated body reached the handler";

  RawClient authorised(server->port());
  ASSERT_TRUE(authorised.connected());
  authorised.Send(absl::StrCat(post, "Authorization: Bearer ", kToken, "\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"));
  const RawClient::Received ok = authorised.ReadUntilClosed(kPatience);
  EXPECT_TRUE(absl::StartsWith(ok.bytes, "HTTP/1.1 200 ")) << ok.bytes;
  EXPECT_TRUE(absl::StrContains(ok.bytes, "got 5")) << ok.bytes;
  // No body, no token: the handler decides (here it answers; a guarded route says 401 itself).
  EXPECT_EQ(RequestWithin(server->port(), "GET", "/healthz", kPatience).status, 200);
  EXPECT_EQ(served.load(), 2);
}

TEST(SlowClients, AHeadOverTheLimitIsRefused) {
  ServerOptions o;
  o.max_head_bytes = 2048;
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  RawClient client(server->port());
  ASSERT_TRUE(client.connected());
  client.Send(absl::StrCat("GET /x HTTP/1.1\r\nX-Big: ", std::string(4096, 'b'), "\r\n\r\n"));
  const RawClient::Received r = client.ReadUntilClosed(kPatience);
  EXPECT_TRUE(absl::StartsWith(r.bytes, "HTTP/1.1 431 ")) << r.bytes;
  EXPECT_TRUE(absl::StrContains(r.bytes, "exceeds 2048 bytes")) << r.bytes;
}

TEST(ConnectionCaps, OneAddressCannotOpenMoreThanItsShare) {
  ServerOptions o;
  o.max_connections_per_client = 2;
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  auto first = std::make_unique<RawClient>(server->port());
  RawClient second(server->port());
  RawClient third(server->port());
  ASSERT_TRUE(first->connected() && second.connected() && third.connected());
  const RawClient::Received refused = third.ReadUntilClosed(kPatience);
  EXPECT_TRUE(refused.closed);
  EXPECT_TRUE(absl::StartsWith(refused.bytes, "HTTP/1.1 503 ")) << refused.bytes;
  EXPECT_TRUE(absl::StrContains(refused.bytes, "this client address already holds the maximum of 2 open connections"))
      << refused.bytes;
  EXPECT_TRUE(first->StillWaiting() && second.StillWaiting()) << "the admitted connections stay open";
  EXPECT_EQ(RequestWithin(server->port(), "GET", "/other", kPatience, "127.0.0.2").status, 200)
      << "another address is not held to this one's share";

  first.reset();  // its place is free again once the server sees it close
  int status = 0;
  for (absl::Time deadline = absl::Now() + kPatience; status != 200 && absl::Now() < deadline;) {
    status = RequestWithin(server->port(), "GET", "/again", kPatience).status;
  }
  EXPECT_EQ(status, 200);
}

TEST(ConnectionCaps, TheServerCapsItsConnectionsInAll) {
  ServerOptions o;
  o.max_connections = 2;
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  RawClient a(server->port(), "127.0.0.1");
  RawClient b(server->port(), "127.0.0.2");
  RawClient c(server->port(), "127.0.0.3");
  ASSERT_TRUE(a.connected() && b.connected() && c.connected());
  const RawClient::Received refused = c.ReadUntilClosed(kPatience);
  EXPECT_TRUE(absl::StartsWith(refused.bytes, "HTTP/1.1 503 ")) << refused.bytes;
  EXPECT_TRUE(absl::StrContains(refused.bytes, "maximum of 2 open connections")) << refused.bytes;
}

TEST(PriorityPaths, HealthzIsAnsweredWhileEveryOtherThreadIsBusy) {
  ServerOptions o;
  o.threads = 1;
  absl::Notification entered, release;
  auto server = StartOrDie(o, [&](const Request& r) {
    if (r.path == "/busy") {
      entered.Notify();
      release.WaitForNotificationWithTimeout(kPatience);
    }
    return Ok(r);
  });
  ASSERT_NE(server, nullptr);
  std::thread busy([&] { RequestWithin(server->port(), "GET", "/busy", 2 * kPatience); });
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(kPatience));
  const testing::Reply health = RequestWithin(server->port(), "GET", "/healthz", kPatience);
  release.Notify();
  busy.join();
  EXPECT_EQ(health.status, 200) << "the probe waited behind the busy handler";
}

}  // namespace
}  // namespace gradsync::http
