// A minimal HTTP endpoint for the worker's /metrics (prometheus-cpp's text exposition).
//
// Why not prometheus-cpp's Exposer: Debian's civetweb runs its handlers on threads with a fixed
// ~100 KiB stack, and glibc carves static TLS out of that stack. OpenBLAS alone brings 60 KiB of
// TLS into the worker, so a scrape overflowed the stack inside mg_printf. This server's one thread
// has a normal stack. Serves GET /metrics; one connection at a time, which a scraper needs.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"

namespace gradsync::worker {

class MetricsHttpServer {
 public:
  // Listens on `address` ("host:port", port 0 picks one). UNAVAILABLE if it cannot bind.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                  std::shared_ptr<prometheus::Registry> registry);
  ~MetricsHttpServer();

  int port() const { return port_; }

 private:
  MetricsHttpServer(int fd, int port, std::shared_ptr<prometheus::Registry> registry);
  void Loop();
  void Serve(int client);

  int fd_;
  int port_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gradsync::worker
