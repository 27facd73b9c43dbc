#include "gloo_peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gloo/alltoall.h"
#include "gloo/context.h"
#include "gloo/transport/pair.h"
#include "gloo/transport/tcp/address.h"

namespace gradsync::comm::internal {
namespace {

// One rank's record for one peer: two NUL-padded texts, Gloo's and the readable one. An IPv6
// address with brackets, port and Gloo's sequence suffix fits in either half.
constexpr size_t kTextBytes = 80;
struct Record {
  char gloo_text[kTextBytes];
  char address[kTextBytes];
};

void Put(char (&out)[kTextBytes], const std::string& text) {
  std::memset(out, 0, kTextBytes);
  std::memcpy(out, text.data(), std::min(text.size(), kTextBytes - 1));
}

std::string Get(const char (&in)[kTextBytes]) { return std::string(in, strnlen(in, kTextBytes)); }

std::string ForPeople(const gloo::transport::Address& address) {
  const auto* tcp = dynamic_cast<const gloo::transport::tcp::Address*>(&address);
  if (tcp == nullptr) return address.str();
  const sockaddr_storage& ss = tcp->getSockaddr();
  char ip[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    return absl::StrCat(ip, ":", ntohs(in->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    return absl::StrCat("[", ip, "]:", ntohs(in6->sin6_port));
  }
  return address.str();
}

// Whether `text` occurs in `message` as a whole address: "[10.0.0.4]:4123" must not match the
// start of "[10.0.0.4]:41234".
bool NamesAddress(const std::string& message, const std::string& text) {
  for (size_t at = message.find(text); at != std::string::npos; at = message.find(text, at + 1)) {
    const size_t end = at + text.size();
    if (end == message.size() || !std::isdigit(static_cast<unsigned char>(message[end]))) return true;
  }
  return false;
}

std::string WhatHappened(const std::string& message) {
  const std::string m = absl::AsciiStrToLower(message);
  if (absl::StrContains(m, "closed") || absl::StrContains(m, "reset by peer") || absl::StrContains(m, "broken pipe")) {
    return "closed the connection";
  }
  if (absl::StrContains(m, "timeout") || absl::StrContains(m, "timed out")) return "did not answer in time";
  return "failed";
}

}  // namespace

std::vector<char> RecordingStore::get(const std::string& key) {
  std::vector<char> value = store_.get(key);
  read_[key] = value;
  return value;
}

GlooPeers GlooPeers::Published(const RecordingStore& store, int rank, int size) {
  GlooPeers out;
  for (int j = 0; j < size && size > 1; ++j) {
    const auto it = store.read().find(std::to_string(j));
    if (j == rank || it == store.read().end()) continue;
    // Rank j publishes one fixed-size address per other rank, in rank order, skipping itself:
    // the layout Gloo's own Context::extractAddress reads.
    const std::vector<char>& all = it->second;
    const size_t bytes = all.size() / (size - 1);
    const size_t at = static_cast<size_t>(rank > j ? rank - 1 : rank) * bytes;
    if (bytes == 0 || at + bytes > all.size()) continue;
    try {
      const gloo::transport::tcp::Address a(std::vector<char>(all.begin() + at, all.begin() + at + bytes));
      out.addresses_.push_back({j, a.str(), ForPeople(a)});
    } catch (const std::exception&) {
      // Not a TCP address of this Gloo's layout: the errors about j stay as Gloo writes them.
    }
  }
  return out;
}

void GlooPeers::Exchange(const std::shared_ptr<gloo::Context>& context, uint32_t tag) {
  const int n = context->size;
  if (n == 1) return;
  // Block j of `mine` goes to rank j: this rank's end of their connection. Block j of `theirs`
  // comes from rank j: its end, the remote end of this rank's pair with j.
  std::vector<Record> mine(n), theirs(n);
  for (int j = 0; j < n; ++j) {
    if (j == context->rank) continue;
    const gloo::transport::Address& local = context->getPair(j)->address();
    Put(mine[j].gloo_text, local.str());
    Put(mine[j].address, ForPeople(local));
  }
  gloo::AlltoallOptions opts(context);
  opts.setTag(tag);
  opts.setInput(reinterpret_cast<uint8_t*>(mine.data()), mine.size() * sizeof(Record));
  opts.setOutput(reinterpret_cast<uint8_t*>(theirs.data()), theirs.size() * sizeof(Record));
  gloo::alltoall(opts);
  std::vector<Address> connected;
  for (int j = 0; j < n; ++j) {
    if (j != context->rank) connected.push_back({j, Get(theirs[j].gloo_text), Get(theirs[j].address)});
  }
  // Matched first: a published listening port may since have been closed and taken by another
  // socket, a connected end is held until the pair closes.
  addresses_.insert(addresses_.begin(), connected.begin(), connected.end());
}

std::string GlooPeers::Explain(const std::string& message) const {
  for (const Address& a : addresses_) {
    if (a.gloo_text.empty() || !NamesAddress(message, a.gloo_text)) continue;
    return absl::StrCat("rank ", a.rank, " (", a.address, ") ", WhatHappened(message), ": ", message);
  }
  return message;
}

}  // namespace gradsync::comm::internal
