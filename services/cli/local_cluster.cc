#include "local_cluster.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "process.h"

namespace gradsync::cli {

namespace fs = std::filesystem;

absl::Status ReadJsonFields(const std::string& path, std::vector<std::pair<std::string, std::string>>* out) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  google::protobuf::Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  if (!status.ok()) return absl::DataLossError(absl::StrCat(path, ": ", status.ToString()));
  for (const auto& [k, v] : s.fields()) {
    if (v.has_string_value()) out->emplace_back(k, v.string_value());
    if (v.has_number_value()) out->emplace_back(k, absl::StrCat(static_cast<int64_t>(v.number_value())));
  }
  return absl::OkStatus();
}

LocalCluster::LocalCluster(LocalClusterOptions options) : options_(std::move(options)) {}

LocalCluster::~LocalCluster() { Stop(); }

std::string LocalCluster::log_dir() const { return (fs::path(options_.state_dir) / "logs").string(); }

absl::Status LocalCluster::StartChild(const std::string& name, std::vector<std::string> argv) {
  Child c;
  c.name = name;
  c.log = (fs::path(log_dir()) / (name + ".log")).string();
  auto pid = Spawn({std::move(argv), c.log});
  if (!pid.ok()) return pid.status();
  c.pid = *pid;
  children_.push_back(std::move(c));
  return absl::OkStatus();
}

absl::Status LocalCluster::Start() {
  std::error_code ec;
  fs::create_directories(log_dir(), ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", log_dir(), ": ", ec.message()));
  const std::string bin = BinaryDir();
  const std::string endpoints = (fs::path(options_.state_dir) / "coordinator.json").string();
  fs::remove(endpoints, ec);
  absl::Status s = StartChild(
      "coordinator",
      {bin + "/gradsync-coordinator", absl::StrCat("--listen=127.0.0.1:", options_.coordinator_port),
       "--metrics_listen=127.0.0.1:0", "--rest_listen=127.0.0.1:0",
       "--endpoints_file=" + endpoints,
       "--artifact_dir=" + (fs::path(options_.state_dir) / "artifacts").string(),
       "--state_dir=" + (fs::path(options_.state_dir) / "coordinator").string()});
  if (!s.ok()) return s;

  const absl::Time deadline = absl::Now() + options_.start_timeout;
  while (address_.empty()) {
    std::vector<std::pair<std::string, std::string>> fields;
    if (fs::exists(endpoints) && ReadJsonFields(endpoints, &fields).ok()) {
      for (const auto& [k, v] : fields) {
        if (k == "grpc") address_ = v;
      }
      continue;
    }
    if (absl::Status alive = CheckAlive(); !alive.ok()) return alive;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("coordinator did not start within ",
                                                      absl::FormatDuration(options_.start_timeout),
                                                      "; see ", children_[0].log));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  for (int i = 0; i < options_.workers; ++i) {
    s = StartChild(absl::StrCat("worker-", i),
                   {bin + "/gradsync-worker", "--coordinator=" + address_, "--comm_host=127.0.0.1",
                    absl::StrCat("--name=local", i), "--device=" + options_.device});
    if (!s.ok()) return s;
  }
  return WriteClusterFile();
}

absl::Status LocalCluster::WriteClusterFile() const {
  const std::string path = (fs::path(options_.state_dir) / "cluster.json").string();
  std::ofstream out(path);
  out << "{\n  \"coordinator\": \"" << address_ << "\",\n  \"pids\": [";
  for (size_t i = 0; i < children_.size(); ++i) out << (i ? ", " : "") << children_[i].pid;
  out << "]\n}\n";
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

void LocalCluster::Stop() {
  std::vector<pid_t> workers;
  for (size_t i = 1; i < children_.size(); ++i) workers.push_back(children_[i].pid);
  StopAll(workers, absl::Seconds(5));
  if (!children_.empty()) StopAll({children_[0].pid}, absl::Seconds(5));
  children_.clear();
}

absl::Status LocalCluster::CheckAlive() const {
  for (const Child& c : children_) {
    if (!Alive(c.pid)) {
      return absl::UnavailableError(absl::StrCat(c.name, " (pid ", c.pid, ") exited; its log ", c.log,
                                                 " ends:\n", TailFile(c.log, 15)));
    }
  }
  return absl::OkStatus();
}

std::vector<pid_t> LocalCluster::pids() const {
  std::vector<pid_t> out;
  for (const Child& c : children_) out.push_back(c.pid);
  return out;
}

std::string LocalCluster::RecentLogs(int lines) const {
  std::string out;
  for (const Child& c : children_) {
    absl::StrAppend(&out, "==> ", c.log, " <==\n", TailFile(c.log, lines), "\n");
  }
  return out;
}

}  // namespace gradsync::cli
