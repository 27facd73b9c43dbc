#include "gradsync/core/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

extern char** environ;

namespace gradsync {

absl::StatusOr<pid_t> Spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("empty command");
  int log = -1;
  if (!spec.log_path.empty()) {
    log = ::open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0) return absl::InternalError(absl::StrCat("cannot open ", spec.log_path, ": ", std::strerror(errno)));
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The environment is built before fork: only async-signal-safe calls may follow it.
  std::vector<std::string> added;
  for (const std::string& kv : spec.env_defaults) {
    const std::string name = kv.substr(0, kv.find('='));
    if (std::getenv(name.c_str()) == nullptr) added.push_back(kv);
  }
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  for (std::string& kv : added) envp.push_back(kv.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (log >= 0) ::close(log);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Between fork and exec only async-signal-safe calls.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::setpgid(0, 0);
    if (::getppid() != parent) ::_exit(127);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    ::_exit(127);
  }
  if (log >= 0) ::close(log);
  return pid;
}

bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return false;                                // our child, just exited
  if (r < 0 && errno == ECHILD) return ::kill(pid, 0) == 0;  // not our child
  return true;
}

std::optional<int> ReapIfExited(pid_t pid) {
  if (pid <= 0) return 0;
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) return status;
  if (r < 0 && errno == ECHILD) return 0;
  return std::nullopt;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return absl::StrCat("killed by signal ", WTERMSIG(status), name != nullptr ? absl::StrCat(" (", name, ")") : "");
  }
  return absl::StrCat("ended with wait status ", status);
}

void StopAll(const std::vector<pid_t>& pids, absl::Duration grace) {
  for (pid_t p : pids) {
    if (p > 0) ::kill(p, SIGTERM);
  }
  const absl::Time deadline = absl::Now() + grace;
  for (;;) {
    bool any = false;
    for (pid_t p : pids) any = any || Alive(p);
    if (!any) return;
    if (absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  for (pid_t p : pids) {
    if (Alive(p)) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
  }
}

std::string BinaryDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string TailFile(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  return absl::StrJoin(tail, "\n");
}

}  // namespace gradsync
