// Which rank a Gloo transport error is about. Private to libs/comm.
//
// Gloo's TCP pairs name a lost peer only by an address: "Connection closed by peer
// [10.0.0.4]:41234", "Read error [...]: Connection reset by peer", "connect [...]: Connection
// refused". The address is the pair's `peer_`, which is one of two things:
//   - the remote end of the connected socket: the peer's listening endpoint on the side that
//     connected, an ephemeral port on the side that accepted;
//   - the address the peer published at rendezvous for this pair, before the socket connected,
//     and also after it if the peer connected before this rank got to the pair (Gloo's
//     Pair::connect then overwrites the connected remote end with it).
// Each rank knows the first kind for its peers only from them: the local end of every connected
// pair, traded in one all-to-all after connecting. The second kind is what rendezvous read from
// the store. A network that rewrites addresses between ranks (NAT) defeats the first kind; errors
// then stay as Gloo wrote them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gloo/rendezvous/store.h"

namespace gloo {
class Context;
}

namespace gradsync::comm::internal {

// Gloo's rendezvous store that remembers what it read: every peer's published addresses.
class RecordingStore : public gloo::rendezvous::Store {
 public:
  // `store` must outlive this one.
  explicit RecordingStore(gloo::rendezvous::Store& store) : store_(store) {}

  void set(const std::string& key, const std::vector<char>& data) override { store_.set(key, data); }
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { store_.wait(keys); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_.wait(keys, timeout);
  }

  const std::map<std::string, std::vector<char>>& read() const { return read_; }

 private:
  gloo::rendezvous::Store& store_;
  std::map<std::string, std::vector<char>> read_;
};

class GlooPeers {
 public:
  // One address Gloo may print for a peer.
  struct Address {
    int rank = 0;
    // As Gloo's messages print it, e.g. "[10.0.0.4]:12961" (this Gloo prints the port in
    // network byte order).
    std::string gloo_text;
    // The same address for people: "10.0.0.4:41234", "[fe80::1]:41234".
    std::string address;
  };

  GlooPeers() = default;

  // The addresses the peers published for their pair with `rank`, from what Gloo's full-mesh
  // connect read through `store` (as far as it got).
  static GlooPeers Published(const RecordingStore& store, int rank, int size);

  // Adds the local end of every peer's connection to this rank. A collective over a context
  // whose full mesh is connected: every rank calls it, with the same `tag`, before any other
  // collective. Throws Gloo's exceptions.
  void Exchange(const std::shared_ptr<gloo::Context>& context, uint32_t tag);

  // `message` (a Gloo exception's text) led by the peer it names and what happened to it:
  // "rank 2 (10.0.0.4:41234) closed the connection: <message>". Unchanged when it names no peer.
  std::string Explain(const std::string& message) const;

 private:
  std::vector<Address> addresses_;
};

}  // namespace gradsync::comm::internal
