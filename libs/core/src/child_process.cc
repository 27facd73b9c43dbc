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
#include <iterator>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
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
  std::vector<std::string> forced = spec.env;
  auto overridden = [&forced](const char* kv) {
    const std::string_view entry(kv);
    const std::string_view name = entry.substr(0, entry.find('='));
    for (const std::string& f : forced) {
      if (std::string_view(f).substr(0, f.find('=')) == name) return true;
    }
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e) {
    if (!overridden(*e)) envp.push_back(*e);
  }
  for (std::string& kv : added) {
    if (!overridden(kv.c_str())) envp.push_back(kv.data());
  }
  for (std::string& kv : forced) envp.push_back(kv.data());
  envp.push_back(nullptr);
  const char* dir = spec.working_dir.empty() ? nullptr : spec.working_dir.c_str();
  const int out_fd = spec.stdout_fd >= 0 ? spec.stdout_fd : log;
  const int err_fd = spec.stderr_fd >= 0 ? spec.stderr_fd : log;
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
    if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (dir != nullptr && ::chdir(dir) != 0) {
      const char msg[] = "cannot enter the working directory\n";
      ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
      (void)ignored;
      ::_exit(127);
    }
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

std::optional<int> StopGroup(pid_t pid, absl::Duration grace) {
  if (pid <= 0) return std::nullopt;
  std::optional<int> status = ReapIfExited(pid);
  if (!status.has_value()) {
    ::kill(-pid, SIGTERM);
    const absl::Time deadline = absl::Now() + grace;
    while (!(status = ReapIfExited(pid)).has_value() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
  }
  ::kill(-pid, SIGKILL);
  if (!status.has_value()) {
    int raw = 0;
    if (::waitpid(pid, &raw, 0) == pid) status = raw;
  }
  return status;
}

absl::StatusOr<std::string> FindProgram(const std::string& program, const std::string& path,
                                        const std::string& working_dir) {
  namespace fs = std::filesystem;
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (program.empty()) return absl::InvalidArgumentError("no program named");
  if (program.find('/') != std::string::npos) {
    const fs::path p = program[0] == '/' || working_dir.empty() ? fs::path(program) : fs::path(working_dir) / program;
    if (runnable(p)) return p.string();
    std::error_code ec;
    return fs::exists(p, ec) ? absl::FailedPreconditionError(absl::StrCat(p.string(), " is not an executable file"))
                             : absl::NotFoundError(absl::StrCat(p.string(), " does not exist"));
  }
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    // An empty entry means the working directory, as for execvp.
    const fs::path base = dir.empty() ? fs::path(working_dir.empty() ? "." : working_dir) : fs::path(std::string(dir));
    if (runnable(base / program)) return (base / program).string();
  }
  return absl::NotFoundError(absl::StrCat("\"", program, "\" is not found on PATH (", path, ")"));
}

std::optional<uint64_t> ProcessStartTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name, field 2, is in parentheses and may hold anything: fields count from the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  if (close + 2 > stat.size()) return std::nullopt;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat.data() + close + 2, stat.size() - close - 2), ' ');
  // starttime is field 22 of the whole line: the 20th after the command name.
  uint64_t start = 0;
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &start)) return std::nullopt;
  return start;
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
