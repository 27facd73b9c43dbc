#include "gradsync/core/listen_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gradsync/core/log.h"

namespace gradsync {
namespace {

// The host part of "host:port", "[v6]:port", a bare v6 address with a port ("::1:7070"), or a
// bare host.
std::string HostOf(std::string_view address) {
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    return std::string(address.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
  }
  const size_t colon = address.rfind(':');
  return std::string(colon == std::string_view::npos ? address : address.substr(0, colon));
}

// One listener's clause of the messages: "--listen=0.0.0.0:7070 needs --a and --b"; "" when the
// listener is off, on loopback or guarded.
std::string Unguarded(const GuardedListen& l) {
  if (l.address.empty() || IsLoopbackListen(l.address)) return "";
  std::vector<std::string> missing;
  for (const auto& [flag, set] : l.tokens) {
    if (!set) missing.push_back(flag);
  }
  if (missing.empty()) return "";
  return absl::StrCat(l.flag, "=", l.address, " needs ", absl::StrJoin(missing, " and "));
}

}  // namespace

bool IsLoopbackListen(std::string_view address) {
  const std::string host = HostOf(address);
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

absl::Status CheckListenersGuarded(const std::vector<GuardedListen>& listeners, bool insecure) {
  std::vector<std::string> unguarded;
  for (const GuardedListen& l : listeners) {
    if (std::string clause = Unguarded(l); !clause.empty()) unguarded.push_back(std::move(clause));
  }
  if (insecure) {
    GS_LOG(WARNING) << "INSECURE (--insecure): "
                    << (unguarded.empty() ? "every listener is on loopback or has its tokens, so it changes nothing"
                                          : absl::StrCat("serving beyond loopback without tokens, so anyone who "
                                                         "can reach these ports can use them: ",
                                                         absl::StrJoin(unguarded, "; ")));
    return absl::OkStatus();
  }
  if (unguarded.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to listen beyond loopback without tokens: ", absl::StrJoin(unguarded, "; "),
      ". Give those flags files holding the tokens, listen on 127.0.0.1 instead, or start with --insecure to "
      "serve without them (anyone who can reach the port could then use it)"));
}

}  // namespace gradsync
