#include "cli_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

std::vector<char*> Argv(const std::vector<std::string>& args, std::string* exe) {
  *exe = absl::StrCat(GRADSYNC_BIN_DIR, "/", args[0]);
  std::vector<char*> argv;
  argv.push_back(exe->data());
  for (size_t i = 1; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::map<std::string, std::string> WaitForEndpoints(const std::string& path) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (absl::Now() < deadline) {
    auto fields = ParseFlatJson(ReadFile(path));
    if (!fields.empty()) return fields;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return {};
}

namespace {

// Each test process keeps its own CLI configuration (the current cluster that `gradsync local up`
// records), so that tests running side by side never reach each other's clusters, nor a
// developer's.
const bool kOwnConfigDir = [] {
  if (std::getenv("GRADSYNC_CONFIG_DIR") != nullptr) return false;
  const char* base = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr && *base ? base : "/tmp", "/gradsync-config-XXXXXX");
  return ::mkdtemp(pattern.data()) != nullptr && ::setenv("GRADSYNC_CONFIG_DIR", pattern.c_str(), 1) == 0;
}();

}  // namespace

std::string BinaryDirectory() { return GRADSYNC_BIN_DIR; }

std::string MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(base != nullptr && *base ? base : "/tmp", "/gradsync-test-XXXXXX");
  return ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
}

std::string ExamplePath(const std::string& name) { return absl::StrCat(GRADSYNC_SOURCE_DIR, "/examples/jobs/", name); }

CommandResult RunBinary(const std::vector<std::string>& args) {
  const std::string dir = MakeTempDir();
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  std::string exe;
  std::vector<char*> argv = Argv(args, &exe);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

CommandResult RunProgram(const std::string& path, const std::vector<std::string>& args) {
  const std::string log = MakeTempDir() + "/out";
  const pid_t pid = StartBinaryAt(path, args, log);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(log);
  return r;
}

std::string PythonWithYaml() {
  for (const std::string python : {"/usr/bin/python3", "/usr/local/bin/python3"}) {
    if (::access(python.c_str(), X_OK) == 0 && RunProgram(python, {"-c", "import yaml"}).exit_code == 0) return python;
  }
  return "";
}

CommandResult SameYamlData(const std::string& python, const std::string& json, const std::string& yaml,
                           const std::vector<std::string>& ignored) {
  constexpr char kCompare[] =
      "import json, re, sys, yaml\n"
      "ignored = set(sys.argv[3:])\n"
      "def drop(v):\n"
      "    if isinstance(v, dict): return {k: drop(x) for k, x in v.items() if k not in ignored}\n"
      "    if isinstance(v, list): return [drop(x) for x in v]\n"
      "    return v\n"
      "def same(x, y):\n"
      "    if isinstance(x, dict) and isinstance(y, dict):\n"
      "        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)\n"
      "    if isinstance(x, list) and isinstance(y, list):\n"
      "        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))\n"
      "    if isinstance(x, str) and type(y) is int and re.fullmatch(r'-?[0-9]+', x):\n"
      "        return int(x) == y\n"
      "    return type(x) is type(y) and x == y\n"
      "a = drop(json.load(open(sys.argv[1])))\n"
      "b = drop(yaml.safe_load(open(sys.argv[2])))\n"
      "ja, jb = json.dumps(a, sort_keys=True), json.dumps(b, sort_keys=True)\n"
      "print(ja if same(a, b) else 'json: ' + ja + '\\nyaml: ' + jb)\n"
      "sys.exit(0 if same(a, b) else 1)\n";
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/a.json") << json;
  std::ofstream(dir + "/b.yaml") << yaml;
  std::vector<std::string> args = {"-c", kCompare, dir + "/a.json", dir + "/b.yaml"};
  args.insert(args.end(), ignored.begin(), ignored.end());
  return RunProgram(python, args);
}

pid_t StartBinary(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> rest(args.begin() + 1, args.end());
  return StartBinaryAt(absl::StrCat(GRADSYNC_BIN_DIR, "/", args[0]), rest, log);
}

pid_t StartBinaryAt(const std::string& path, const std::vector<std::string>& args, const std::string& log) {
  std::string exe = path;
  std::vector<char*> argv = {exe.data()};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

std::map<std::string, std::string> ParseFlatJson(const std::string& json) {
  std::map<std::string, std::string> out;
  google::protobuf::Struct s;
  if (!google::protobuf::util::JsonStringToMessage(json, &s).ok()) return out;
  for (const auto& [k, v] : s.fields()) {
    if (v.has_string_value()) out[k] = v.string_value();
    if (v.has_number_value()) out[k] = absl::StrCat(v.number_value());
  }
  return out;
}

bool ProcessAlive(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) return false;
  return ::kill(pid, 0) == 0;
}

Children::~Children() {
  while (!pids_.empty()) Stop(pids_.back());
}

pid_t Children::Start(const std::vector<std::string>& args, const std::string& log) {
  pids_.push_back(StartBinary(args, log));
  return pids_.back();
}

void Children::Stop(pid_t pid) {
  ::kill(pid, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (::waitpid(pid, nullptr, WNOHANG) == 0) {
    if (absl::Now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  std::erase(pids_, pid);
}

std::vector<std::string> CoordinatorArgs(const std::string& address, const std::string& dir,
                                         const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"gradsync-coordinator", "--listen=" + address, "--metrics_listen=127.0.0.1:0",
                                   "--rest_listen=127.0.0.1:0", "--artifact_root=" + dir + "/artifacts"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> WorkerArgs(const std::string& coordinator, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"gradsync-worker", "--coordinator=" + coordinator, "--comm_host=127.0.0.1",
                                   "--device=cpu",    "--metrics_listen=127.0.0.1:0", "--health_listen=127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int64_t ProgressStep(const std::string& job_json) {
  const size_t at = job_json.find("\"step\": \"");
  int64_t step = -1;
  if (at == std::string::npos) return step;
  const size_t begin = at + 9;
  (void)absl::SimpleAtoi(job_json.substr(begin, job_json.find('"', begin) - begin), &step);
  return step;
}

std::string WaitForJob(const std::string& address, const std::string& job, absl::Duration timeout,
                       const std::function<bool(const std::string&)>& pred) {
  return WaitForJobWith({"--address", address}, job, timeout, pred);
}

std::string WaitForJobWith(const std::vector<std::string>& connection, const std::string& job, absl::Duration timeout,
                           const std::function<bool(const std::string&)>& pred) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> get = {"gradsync", "get", job, "-o", "json"};
  get.insert(get.end(), connection.begin(), connection.end());
  std::string last;
  while (absl::Now() < deadline) {
    CommandResult r = RunBinary(get);
    last = r.out + r.err;
    if (r.exit_code == 0 && pred(r.out)) return r.out;
    absl::SleepFor(absl::Milliseconds(200));
  }
  ADD_FAILURE() << "job " << job << " never reached the expected state; last answer:\n" << last;
  return last;
}

}  // namespace gradsync::testing
