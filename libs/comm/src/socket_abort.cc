#include "socket_abort.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "gloo/context.h"
#include "gloo/transport/pair.h"
#include "gloo/transport/tcp/address.h"

namespace gradsync::comm::internal {
namespace {

bool SameEndpoint(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

// The local endpoint of each of the context's pairs: after connecting, a Gloo TCP pair's own
// address is its socket's name.
std::vector<sockaddr_storage> PairEndpoints(gloo::Context& context) {
  std::vector<sockaddr_storage> out;
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank) continue;
    const std::unique_ptr<gloo::transport::Pair>& pair = context.getPair(peer);
    if (pair == nullptr) continue;
    const auto* tcp = dynamic_cast<const gloo::transport::tcp::Address*>(&pair->address());
    if (tcp != nullptr) out.push_back(tcp->getSockaddr());
  }
  return out;
}

// This process's open socket descriptors, from /proc/self/fd.
std::vector<int> SocketDescriptors() {
  std::vector<int> out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode)) out.push_back(static_cast<int>(fd));
  }
  closedir(dir);
  return out;
}

}  // namespace

int ShutdownPairSockets(const std::shared_ptr<gloo::Context>& context) {
  if (context == nullptr) return 0;
  const std::vector<sockaddr_storage> endpoints = PairEndpoints(*context);
  if (endpoints.empty()) return 0;
  int shut = 0;
  for (const int fd : SocketDescriptors()) {
    sockaddr_storage name{};
    socklen_t len = sizeof(name);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&name), &len) != 0) continue;
    for (const sockaddr_storage& endpoint : endpoints) {
      if (SameEndpoint(name, endpoint) && ::shutdown(fd, SHUT_RDWR) == 0) {
        ++shut;
        break;
      }
    }
  }
  return shut;
}

}  // namespace gradsync::comm::internal
