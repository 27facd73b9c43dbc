// One Gloo rank in a process of its own, for the tests that need a rank to die, or to live apart
// from /dev/shm of the others (gloo_process_test.cc). Arguments, all --name=value:
//   --coordinator  the test's coordinator server; --job, --rank, --world: the rank it joins;
//   --transport    "tcp" or "shm" (all-reduce through shared memory when every rank maps it);
//   --then         "hang": connect, then wait, issuing nothing, until killed;
//                  "loop": all-reduce gradient-bucket-sized buffers (2^18 floats) back to back
//                  until a collective fails or the process is killed;
//                  "allreduce": all-reduce rank+1 over 1000 floats once, check the sum and that
//                  the backend is --backend, then exit;
//                  "probe": only make the namespace below, then exit;
//   --own_dev_shm  first, before any thread starts, move into a mount namespace of its own with a
//                  fresh tmpfs on /dev/shm: what a container without the host's IPC sees. The
//                  host name stays the others'.
// Exit status: 0 done, 77 the namespace cannot be made here (no privilege), 1 anything else.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"
#include "gradsync/rpc/server.h"

namespace {

constexpr int kNoNamespace = 77;

bool WriteFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// A mount namespace with its own empty /dev/shm. Without privilege over mounts, a user namespace
// that maps this user to root grants it (where the kernel allows unprivileged user namespaces).
bool OwnDevShm() {
  if (unshare(CLONE_NEWNS) != 0) {
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      std::cerr << "unshare: " << std::strerror(errno) << "\n";
      return false;
    }
    (void)WriteFile("/proc/self/setgroups", "deny");
    if (!WriteFile("/proc/self/uid_map", absl::StrCat("0 ", uid, " 1")) ||
        !WriteFile("/proc/self/gid_map", absl::StrCat("0 ", gid, " 1"))) {
      std::cerr << "cannot map this user into the new user namespace\n";
      return false;
    }
  }
  // Private first: the tmpfs below must not propagate to the host's /dev/shm.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    std::cerr << "making / private: " << std::strerror(errno) << "\n";
    return false;
  }
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m") != 0) {
    std::cerr << "mounting a tmpfs on /dev/shm: " << std::strerror(errno) << "\n";
    return false;
  }
  return true;
}

int Run(const std::map<std::string, std::string>& args) {
  int rank = 0, world = 0;
  if (!absl::SimpleAtoi(args.at("rank"), &rank) || !absl::SimpleAtoi(args.at("world"), &world)) return 1;
  auto kv = gradsync::comm::NewCoordinatorKvClient(
      gradsync::v1::CoordinatorService::NewStub(gradsync::rpc::MakeChannel(args.at("coordinator"))), args.at("job"), 1);
  gradsync::comm::GlooOptions options;
  options.timeout = absl::Seconds(30);
  options.shared_memory = args.at("transport") == "shm";
  auto comm = gradsync::comm::ConnectGloo(kv.get(), rank, world, options);
  if (!comm.ok()) {
    std::cerr << comm.status() << "\n";
    return 1;
  }
  if (args.at("then") == "hang") {
    for (;;) absl::SleepFor(absl::Seconds(1));
  }
  if (args.at("then") == "loop") {
    std::vector<float> bucket(1 << 18, 1.0f);
    while ((*comm)->AllReduce(std::span<float>(bucket), gradsync::comm::ReduceOp::kAverage)->Wait().ok()) {
    }
    return 0;
  }
  std::vector<float> data(1000, static_cast<float>(rank + 1));
  if (absl::Status s = (*comm)->AllReduceSum(std::span<float>(data)); !s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  const float sum = static_cast<float>(world * (world + 1) / 2);
  for (float v : data) {
    if (v != sum) {
      std::cerr << "all-reduce gave " << v << ", expected " << sum << "\n";
      return 1;
    }
  }
  if ((*comm)->backend() != args.at("backend")) {
    std::cerr << "backend " << (*comm)->backend() << ", expected " << args.at("backend") << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args = {{"transport", "tcp"}, {"then", "hang"}, {"backend", "gloo"},
                                             {"coordinator", ""},  {"job", ""},      {"rank", ""},
                                             {"world", ""}};
  bool own_dev_shm = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const size_t eq = a.find('=');
    if (a == "--own_dev_shm") {
      own_dev_shm = true;
    } else if (a.rfind("--", 0) == 0 && eq != std::string::npos && args.count(a.substr(2, eq - 2)) == 1) {
      args[a.substr(2, eq - 2)] = a.substr(eq + 1);
    } else {
      std::cerr << "unknown argument " << a << "\n";
      return 1;
    }
  }
  if (own_dev_shm && !OwnDevShm()) return kNoNamespace;
  if (args.at("then") == "probe") return 0;
  return Run(args);
}
