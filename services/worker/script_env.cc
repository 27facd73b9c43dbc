#include "script_env.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gradsync/spec/job_spec.h"

namespace gradsync::worker {
namespace {

constexpr char kMasterKey[] = "script/master";

std::string HostKey(int rank) { return absl::StrCat("script/host/", rank); }

}  // namespace

absl::StatusOr<int> ChooseFreePort(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &found); rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot resolve ", host, ": ", ::gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError(absl::StrCat("no address of ", host, " to bind"));
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      ::close(fd);
      ::freeaddrinfo(found);
      const int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                   : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      return port;
    }
    last = absl::UnavailableError(absl::StrCat("cannot bind a port on ", host, ": ", std::strerror(errno)));
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return last;
}

absl::StatusOr<ScriptLayout> MeetRanks(comm::KvClient* kv, int rank, int world_size, const std::string& host,
                                       absl::Duration timeout, const std::atomic<bool>* abort) {
  if (rank == 0) {
    absl::StatusOr<int> port = ChooseFreePort(host);
    if (!port.ok()) return port.status();
    if (absl::Status s = kv->Set(kMasterKey, absl::StrCat(host, "\n", *port)); !s.ok()) return s;
  }
  if (absl::Status s = kv->Set(HostKey(rank), host); !s.ok()) return s;
  std::vector<std::string> keys = {kMasterKey};
  for (int r = 0; r < world_size; ++r) keys.push_back(HostKey(r));
  // In slices, so that an abort (another rank failed to start) ends the wait at once.
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const absl::Status s = kv->Wait(keys, std::min(absl::Seconds(1), deadline - absl::Now()));
    if (s.ok()) break;
    if (!absl::IsDeadlineExceeded(s) || absl::Now() >= deadline) return s;
    if (abort->load()) return absl::AbortedError("the generation was aborted while its ranks met");
  }
  ScriptLayout layout;
  absl::StatusOr<std::string> master = kv->Get(kMasterKey, timeout);
  if (!master.ok()) return master.status();
  const std::vector<std::string> parts = absl::StrSplit(*master, '\n');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &layout.master_port)) {
    return absl::InternalError(absl::StrCat("rank 0 published a malformed master address: \"", *master, "\""));
  }
  layout.master_addr = parts[0];
  for (int r = 0; r < world_size; ++r) {
    absl::StatusOr<std::string> h = kv->Get(HostKey(r), timeout);
    if (!h.ok()) return h.status();
    layout.hosts.push_back(*std::move(h));
  }
  return layout;
}

std::vector<std::string> TorchrunEnvironment(const v1::Assignment& a, const ScriptLayout& layout, bool inherited_omp) {
  const int rank = a.rank();
  const std::string& mine = layout.hosts.at(static_cast<size_t>(rank));
  int local_rank = 0, local_world = 0;
  // Hosts numbered by their lowest rank: torchrun's node ranks.
  std::map<std::string, int> node_of;
  for (size_t r = 0; r < layout.hosts.size(); ++r) {
    node_of.try_emplace(layout.hosts[r], static_cast<int>(node_of.size()));
    if (layout.hosts[r] != mine) continue;
    if (static_cast<int>(r) < rank) ++local_rank;
    ++local_world;
  }
  const int max_restarts = spec::MaxRestarts(a.spec().training());
  std::vector<std::string> env = {
      absl::StrCat("RANK=", rank),
      absl::StrCat("LOCAL_RANK=", local_rank),
      absl::StrCat("WORLD_SIZE=", a.world_size()),
      absl::StrCat("LOCAL_WORLD_SIZE=", local_world),
      absl::StrCat("GROUP_RANK=", node_of.at(mine)),
      absl::StrCat("GROUP_WORLD_SIZE=", node_of.size()),
      absl::StrCat("ROLE_RANK=", rank),
      absl::StrCat("ROLE_WORLD_SIZE=", a.world_size()),
      "ROLE_NAME=default",
      absl::StrCat("MASTER_ADDR=", layout.master_addr),
      absl::StrCat("MASTER_PORT=", layout.master_port),
      absl::StrCat("TORCHELASTIC_RESTART_COUNT=", a.restarts()),
      absl::StrCat("TORCHELASTIC_MAX_RESTARTS=", max_restarts),
      absl::StrCat("TORCHELASTIC_RUN_ID=", a.job_id()),
      "TORCHELASTIC_USE_AGENT_STORE=False",
  };
  if (!inherited_omp) env.push_back("OMP_NUM_THREADS=1");
  return env;
}

}  // namespace gradsync::worker
