#include "script_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync::worker {
namespace {

// A line longer than this is delivered in pieces (the job log cuts each message further).
constexpr size_t kMaxLine = 64 * 1024;

}  // namespace

absl::StatusOr<std::unique_ptr<ScriptChild>> ScriptChild::Start(ChildSpec spec, ChildLine on_line) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  spec.stdout_fd = out[1];
  spec.stderr_fd = err[1];
  absl::StatusOr<pid_t> pid = Spawn(spec);
  ::close(out[1]);
  ::close(err[1]);
  if (!pid.ok()) {
    ::close(out[0]);
    ::close(err[0]);
    return pid.status();
  }
  return std::unique_ptr<ScriptChild>(new ScriptChild(*pid, out[0], err[0], std::move(on_line)));
}

ScriptChild::ScriptChild(pid_t pid, int out, int err, ChildLine on_line)
    : pid_(pid),
      on_line_(std::move(on_line)),
      out_reader_([this, out] { Read(out, "stdout"); }),
      err_reader_([this, err] { Read(err, "stderr"); }) {}

ScriptChild::~ScriptChild() {
  Stop(absl::ZeroDuration());
  // The group is dead, so the pipes' write ends are closed and the readers end.
  if (out_reader_.joinable()) out_reader_.join();
  if (err_reader_.joinable()) err_reader_.join();
}

void ScriptChild::Read(int fd, std::string_view stream) {
  std::string pending;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line_(stream, std::string_view(pending).substr(start, nl - start));
    }
    pending.erase(0, start);
    if (pending.size() >= kMaxLine) {
      on_line_(stream, pending);
      pending.clear();
    }
  }
  if (!pending.empty()) on_line_(stream, pending);
  ::close(fd);
  --open_streams_;
}

std::optional<int> ScriptChild::Poll() {
  if (status_.has_value()) return status_;
  status_ = ReapIfExited(pid_);
  // The leader is gone; anything it left in its group goes too, before its id can be reused.
  if (status_.has_value()) ::kill(-pid_, SIGKILL);
  return status_;
}

int ScriptChild::Stop(absl::Duration grace) {
  if (!status_.has_value()) status_ = StopGroup(pid_, grace);
  return status_.value_or(0);
}

bool ScriptChild::DrainOutput(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (open_streams_.load() > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  return open_streams_.load() == 0;
}

}  // namespace gradsync::worker
