// libs/http's Server over real sockets: routing through one handler, the errors the server
// raises itself, TLS with real certificates, pipelined requests, and a slow client that must not
// hold the others up (more of those in slow_client_test.cc).
#include "gradsync/http/server.h"

#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "http_client.h"
#include "raw_client.h"

namespace gradsync::http {
namespace {

using gradsync::testing::HttpRequest;
using testing::RawClient;

Reply Echo(const Request& r) {
  return Reply{200,
               absl::StrCat(r.method, " ", r.path, " q=", r.Query("q"), " h=", r.Header("x-thing"), " ", r.body),
               "text/plain",
               {{"X-Served", "yes"}}};
}

std::unique_ptr<Server> StartOrDie(ServerOptions options, Handler handler = Echo) {
  auto s = Server::Start(std::move(options), std::move(handler));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

ServerOptions Loopback() {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.name = "test";
  return o;
}

TEST(HttpServer, OneHandlerSeesMethodPathQueryHeadersAndBody) {
  auto server = StartOrDie(Loopback());
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  auto r = HttpRequest("POST", server->port(), "/a%20b/c?q=x%3Dy&q=second", {{"X-Thing", "v"}}, "payload");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /a b/c q=x=y h=v payload");
  EXPECT_EQ(r.headers["x-served"], "yes");
  EXPECT_EQ(HttpRequest("DELETE", server->port(), "/d").body, "DELETE /d q= h= ");
}

TEST(HttpServer, HeadIsAnsweredAsGetWithoutTheBody) {
  auto server = StartOrDie(Loopback());
  ASSERT_NE(server, nullptr);
  auto get = HttpRequest("GET", server->port(), "/x");
  auto head = HttpRequest("HEAD", server->port(), "/x");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  EXPECT_EQ(head.headers["content-length"], std::to_string(get.body.size()));
}

TEST(HttpServer, ABodyOverTheLimitIsRefusedInTheServicesFormat) {
  ServerOptions o = Loopback();
  o.max_body_bytes = 100;
  int handled = 0;
  o.error_reply = [](int status, std::string message) { return Reply{status, "{\"error\":\"" + message + "\"}"}; };
  auto server = StartOrDie(o, [&handled](const Request& r) {
    ++handled;
    return Echo(r);
  });
  ASSERT_NE(server, nullptr);
  auto r = HttpRequest("POST", server->port(), "/p", {}, std::string(5000, 'x'));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.body, "{\"error\":\"request body exceeds the limit of 100 bytes\"}");
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(handled, 0) << "the handler never sees a refused request";
  EXPECT_EQ(HttpRequest("POST", server->port(), "/p", {}, std::string(100, 'x')).status, 200);
}

TEST(HttpServer, AFormEncodedBodyOverItsOwnLimitIsToldToUseJson) {
  ServerOptions o = Loopback();
  o.max_body_bytes = 1 << 20;
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  const std::string body(9000, 'x');
  auto form = HttpRequest("POST", server->port(), "/p", {{"Content-Type", "application/x-www-form-urlencoded"}}, body);
  EXPECT_EQ(form.status, 413);
  EXPECT_TRUE(absl::StrContains(form.body, "Content-Type: application/json")) << form.body;
  auto json = HttpRequest("POST", server->port(), "/p", {{"Content-Type", "application/json"}}, body);
  EXPECT_EQ(json.status, 200);
  EXPECT_EQ(json.body.size(), std::string("POST /p q= h= ").size() + body.size());
}

TEST(HttpServer, BadAddressesAndBusyPortsNameTheProblem) {
  ServerOptions o = Loopback();
  o.listen = "nowhere";
  auto bad = Server::Start(o, Echo);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "test address \"nowhere\"")) << bad.status();

  auto first = StartOrDie(Loopback());
  ASSERT_NE(first, nullptr);
  o.listen = absl::StrCat("127.0.0.1:", first->port());
  auto busy = Server::Start(o, Echo);
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(busy.status().message(), o.listen)) << busy.status();

  o.listen = "127.0.0.1:0";
  o.tls_cert_file = "/nonexistent.pem";
  auto half = Server::Start(o, Echo);
  EXPECT_EQ(half.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(half.status().message(), "both a certificate file and a key file")) << half.status();
}

TEST(HttpServer, ASlowClientDoesNotHoldUpTheNextRequest) {
  auto server = StartOrDie(Loopback());
  ASSERT_NE(server, nullptr);
  RawClient slow(server->port());
  ASSERT_TRUE(slow.connected() && slow.Send("GET /x HTTP/1.1\r\nHo"));
  // A server serving one connection at a time answers this only after giving up on `slow`.
  EXPECT_EQ(HttpRequest("GET", server->port(), "/fast").status, 200);
  EXPECT_TRUE(slow.StillWaiting());
}

// A client that asks for "100 Continue" before its body gets it from the acceptor, once, and the
// request with its body is then served as any other.
TEST(HttpServer, ExpectContinueIsAnsweredOnceAndTheBodyArrives) {
  auto server = StartOrDie(Loopback());
  ASSERT_NE(server, nullptr);
  RawClient client(server->port());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send("POST /c HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"
                          "Connection: close\r\n\r\n"));
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_TRUE(client.Send("hello"));
  const RawClient::Received r = client.ReadUntilClosed(absl::Seconds(10));
  EXPECT_TRUE(absl::StartsWith(r.bytes, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 ")) << r.bytes;
  EXPECT_EQ(r.bytes.find("100 Continue"), r.bytes.rfind("100 Continue")) << "answered twice: " << r.bytes;
  EXPECT_TRUE(absl::StrContains(r.bytes, "hello")) << r.bytes;
}

TEST(HttpServer, PipelinedRequestsOnOneConnectionAreAnsweredInOrder) {
  auto server = StartOrDie(Loopback());
  ASSERT_NE(server, nullptr);
  RawClient client(server->port());
  ASSERT_TRUE(client.connected());
  // Both heads arrive in one segment: the second is already buffered when the first is served.
  ASSERT_TRUE(
      client.Send("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
                  "GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
  const RawClient::Received r = client.ReadUntilClosed(absl::Seconds(15));
  EXPECT_TRUE(r.closed);
  const size_t a = r.bytes.find("POST /a q= h= xyz"), b = r.bytes.find("GET /b q= h= ");
  ASSERT_NE(a, std::string::npos) << r.bytes;
  ASSERT_NE(b, std::string::npos) << r.bytes;
  EXPECT_LT(a, b);
}

// A self-signed certificate for localhost and 127.0.0.1 made with the openssl CLI, in a fresh directory.
class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gradsync_http_tls_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string command =
        absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost",
                     " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout ", Path("key.pem"), " -out ",
                     Path("cert.pem"), " > ", Path("openssl.log"), " 2>&1");
    ASSERT_EQ(std::system(command.c_str()), 0) << "openssl CLI failed: " << command;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(HttpsTest, ServesTlsOnlyOnTheOneListener) {
  ServerOptions o = Loopback();
  o.tls_cert_file = Path("cert.pem");
  o.tls_key_file = Path("key.pem");
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->tls());
  httplib::SSLClient client("127.0.0.1", server->port());
  client.set_ca_cert_path(Path("cert.pem").c_str());
  client.enable_server_certificate_verification(true);
  client.set_connection_timeout(5);
  auto r = client.Get("/secure?q=1");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "GET /secure q=1 h= ");
  // No plaintext side door: HTTP to the TLS port reaches no handler.
  auto plain = HttpRequest("GET", server->port(), "/plain");
  EXPECT_NE(plain.status, 200);
  EXPECT_FALSE(absl::StrContains(plain.body, "/plain")) << plain.body;
}

TEST_F(HttpsTest, AHandshakeThatNeverEndsIsCutOffAtTheHeadDeadline) {
  ServerOptions o = Loopback();
  o.tls_cert_file = Path("cert.pem");
  o.tls_key_file = Path("key.pem");
  o.header_timeout = absl::Seconds(1);
  auto server = StartOrDie(o);
  ASSERT_NE(server, nullptr);
  RawClient stalled(server->port());
  ASSERT_TRUE(stalled.connected() && stalled.Send("\x16\x03\x01"));  // the first bytes of a ClientHello
  const RawClient::Received r = stalled.ReadUntilClosed(absl::Seconds(15));
  EXPECT_TRUE(r.closed) << "the half-begun handshake still holds its connection";
  EXPECT_EQ(r.bytes, "");
}

TEST_F(HttpsTest, AnUnusableCertificateOrKeyIsNamed) {
  ServerOptions o = Loopback();
  o.tls_cert_file = Path("openssl.log");
  o.tls_key_file = Path("key.pem");
  auto not_pem = Server::Start(o, Echo);
  EXPECT_EQ(not_pem.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(not_pem.status().message(), "the certificate " + Path("openssl.log")))
      << not_pem.status();
  o.tls_cert_file = Path("cert.pem");
  o.tls_key_file = Path("cert.pem");
  auto wrong_key = Server::Start(o, Echo);
  EXPECT_EQ(wrong_key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(wrong_key.status().message(), "the key " + Path("cert.pem"))) << wrong_key.status();
}

}  // namespace
}  // namespace gradsync::http
