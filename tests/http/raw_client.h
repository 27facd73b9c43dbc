// A client socket driven byte by byte, for tests of clients that misbehave on purpose: half a
// request head, one byte at a time, or nothing at all.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync::http::testing {

class RawClient {
 public:
  // Connects to 127.0.0.1:port from `source`; every 127.x.y.z address is loopback on Linux, so a
  // test can play several client addresses.
  explicit RawClient(int port, const std::string& source = "127.0.0.1");
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  // Sends all of `bytes`; false once the server has closed the connection.
  bool Send(absl::string_view bytes);
  // True while the server has neither answered nor closed this connection.
  bool StillWaiting() const;

  struct Received {
    std::string bytes;
    bool closed = false;  // the server closed the connection within the timeout
  };
  // Reads until the server closes the connection or `timeout` passes.
  Received ReadUntilClosed(absl::Duration timeout);

 private:
  int fd_ = -1;
  bool connected_ = false;
};

struct Reply {
  int status = 0;  // 0 when no complete reply came within the timeout
  std::string body;
};

// One request on a connection of its own, waiting at most `timeout` for the reply.
Reply RequestWithin(int port, absl::string_view method, absl::string_view path, absl::Duration timeout,
                    const std::string& source = "127.0.0.1", absl::string_view body = "");

// Slow clients: each sends `head` at once, then one more byte of a header value every 100 ms,
// from a thread of its own, until destroyed. None ever completes its request head.
class Trickler {
 public:
  Trickler(int port, int clients, absl::string_view head);
  ~Trickler();

  RawClient& client(int i) { return *clients_[i]; }

 private:
  std::vector<std::unique_ptr<RawClient>> clients_;
  std::vector<std::atomic<bool>> closed_;  // the server closed it: sending stops
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gradsync::http::testing
