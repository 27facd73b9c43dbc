// Runs gradsync's real binaries from tests and reads what they print.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "ports.h"

namespace gradsync::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `bin/<args[0]>` with the remaining arguments, waits for it, captures both streams.
CommandResult RunBinary(const std::vector<std::string>& args);

// Runs the executable at `path` (not one of gradsync's) and waits for it; `out` holds both of its
// streams, `err` nothing.
CommandResult RunProgram(const std::string& path, const std::vector<std::string>& args);

// A python3 with PyYAML (the reference YAML reader for -o yaml); empty when none is installed.
std::string PythonWithYaml();
// Whether PyYAML reads `yaml` as the same data as Python's json reads `json`, types included (the
// string "42" is not the number 42, except where the JSON is protobuf's for a 64-bit integer,
// "4000", which -o yaml prints as the integer), once the keys `ignored` are dropped at every level
// (values that change between two calls). Exit code 0 when they agree; `out` shows both otherwise.
CommandResult SameYamlData(const std::string& python, const std::string& json, const std::string& yaml,
                           const std::vector<std::string>& ignored = {});

// Starts `bin/<args[0]>` in the background with stdout and stderr to `log`.
pid_t StartBinary(const std::vector<std::string>& args, const std::string& log);
// Starts the executable at `path` (not one of gradsync's) likewise.
pid_t StartBinaryAt(const std::string& path, const std::vector<std::string>& args, const std::string& log);

// Children of one test, stopped (SIGTERM, then SIGKILL after a grace period) and reaped when the
// test ends, whether it passed or not.
class Children {
 public:
  ~Children();
  pid_t Start(const std::vector<std::string>& args, const std::string& log);
  // Stops one child early (it is then skipped at the end).
  void Stop(pid_t pid);

 private:
  std::vector<pid_t> pids_;
};

// A flat JSON object's fields as text (strings unquoted, numbers as printed by protobuf).
std::map<std::string, std::string> ParseFlatJson(const std::string& json);

std::string ExamplePath(const std::string& name);
// Command lines of the services on loopback. Every port but the coordinator's gRPC address is
// chosen free: the default ports would collide between tests running at once. `extra` flags are
// appended.
std::vector<std::string> CoordinatorArgs(const std::string& address, const std::string& dir,
                                         const std::vector<std::string>& extra = {});
std::vector<std::string> WorkerArgs(const std::string& coordinator, const std::vector<std::string>& extra = {});

// The progress step in `gradsync get -o json` output, or -1 before the first report.
int64_t ProgressStep(const std::string& job_json);
// Polls `gradsync get JOB -o json --address ADDRESS` until `pred` holds on its output or `timeout`
// passes (then the test fails, showing the last answer). Returns the last output.
std::string WaitForJob(const std::string& address, const std::string& job, absl::Duration timeout,
                       const std::function<bool(const std::string&)>& pred);
// The same with the connection options given whole, e.g. {"--state-dir", DIR} for a local
// cluster, whose address and token the CLI reads from DIR.
std::string WaitForJobWith(const std::vector<std::string>& connection, const std::string& job, absl::Duration timeout,
                           const std::function<bool(const std::string&)>& pred);
// The addresses a service wrote to its --endpoints_file, once it has (empty map after 20 s).
std::map<std::string, std::string> WaitForEndpoints(const std::string& path);
std::string MakeTempDir();

// Where the built binaries are (gradsync, gradsync-coordinator, ...).
std::string BinaryDirectory();
std::string ReadFile(const std::string& path);
bool ProcessAlive(pid_t pid);

}  // namespace gradsync::testing
