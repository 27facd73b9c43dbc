#include "gradsync/cluster/local_cluster_file.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/cluster/own_files.h"
#include "gradsync/core/endpoints_file.h"

namespace gradsync::cluster {
namespace {

namespace fs = std::filesystem;

constexpr char kFileName[] = "endpoints.json";
constexpr char kWorkers[] = "workers";
constexpr char kSupervisorPid[] = "pid";
constexpr char kSupervisorStart[] = "pidStart";
constexpr char kLogs[] = "logs";
constexpr char kPids[] = "pids";
constexpr char kTokenFiles[] = "tokenFiles";
constexpr char kDataRoots[] = "dataRoots";

absl::StatusOr<google::protobuf::Struct> ReadJsonObject(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  google::protobuf::Struct object;
  auto status = google::protobuf::util::JsonStringToMessage(text, &object);
  if (!status.ok()) return absl::DataLossError(absl::StrCat(path, ": ", status.ToString()));
  return object;
}

}  // namespace

std::string LocalClusterFilePath(const std::string& state_dir) { return (fs::path(state_dir) / kFileName).string(); }

std::string LocalClusterFileJson(const LocalClusterFile& file) {
  std::string json = "{\n";
  for (const auto& [name, address] : file.endpoints) {
    absl::StrAppend(&json, "  ", JsonString(name), ": ", JsonString(address), ",\n");
  }
  absl::StrAppend(&json, "  \"", kWorkers, "\": ", file.workers, ",\n");
  if (file.supervisor_pid > 0) {
    absl::StrAppend(&json, "  \"", kSupervisorPid, "\": ", file.supervisor_pid, ",\n");
    absl::StrAppend(&json, "  \"", kSupervisorStart, "\": ", file.supervisor_start, ",\n");
  }
  absl::StrAppend(&json, "  \"", kLogs, "\": ", JsonString(file.log_dir), ",\n  \"", kPids, "\": [");
  for (size_t i = 0; i < file.pids.size(); ++i) absl::StrAppend(&json, i ? ", " : "", file.pids[i]);
  absl::StrAppend(&json, "]");
  if (!file.data_roots.empty()) {
    absl::StrAppend(&json, ",\n  \"", kDataRoots, "\": [");
    for (size_t i = 0; i < file.data_roots.size(); ++i) {
      absl::StrAppend(&json, i ? ", " : "", JsonString(file.data_roots[i]));
    }
    absl::StrAppend(&json, "]");
  }
  if (!file.token_files.empty()) {
    absl::StrAppend(&json, ",\n  \"", kTokenFiles, "\": {");
    const char* separator = "";
    for (const auto& [name, path] : file.token_files) {
      absl::StrAppend(&json, separator, "\n    ", JsonString(name), ": ", JsonString(path));
      separator = ",";
    }
    absl::StrAppend(&json, "\n  }");
  }
  return json + "\n}\n";
}

absl::Status WriteLocalClusterFile(const std::string& state_dir, const LocalClusterFile& file) {
  return ReplaceFileAtomically(LocalClusterFilePath(state_dir), LocalClusterFileJson(file));
}

absl::StatusOr<LocalClusterFile> ReadLocalClusterFile(const std::string& state_dir) {
  const std::string path = LocalClusterFilePath(state_dir);
  // Its addresses receive the cluster's tokens: only a file no one else could have written counts.
  if (absl::Status s = CheckOwnDirectory(state_dir); !s.ok()) return s;
  if (absl::Status s = CheckOwnFile(path); !s.ok()) return s;
  absl::StatusOr<google::protobuf::Struct> object = ReadJsonObject(path);
  if (!object.ok()) return object.status();
  LocalClusterFile file;
  file.state_dir = state_dir;
  for (const auto& [key, value] : object->fields()) {
    if (key == kWorkers) {
      file.workers = static_cast<int>(value.number_value());
    } else if (key == kSupervisorPid) {
      file.supervisor_pid = static_cast<pid_t>(value.number_value());
    } else if (key == kSupervisorStart) {
      file.supervisor_start = static_cast<uint64_t>(value.number_value());
    } else if (key == kLogs) {
      file.log_dir = value.string_value();
    } else if (key == kPids) {
      for (const auto& pid : value.list_value().values()) file.pids.push_back(static_cast<pid_t>(pid.number_value()));
    } else if (key == kDataRoots) {
      for (const auto& root : value.list_value().values()) file.data_roots.push_back(root.string_value());
    } else if (key == kTokenFiles) {
      for (const auto& [name, path] : value.struct_value().fields()) file.token_files[name] = path.string_value();
    } else if (value.has_string_value()) {
      file.endpoints[key] = value.string_value();
    } else {
      return absl::DataLossError(absl::StrCat(path, ": \"", key, "\" is not an endpoint address"));
    }
  }
  return file;
}

void RemoveLocalClusterFile(const std::string& state_dir) {
  std::error_code ignored;
  fs::remove(LocalClusterFilePath(state_dir), ignored);
}

absl::Status ReadJsonFields(const std::string& path, std::vector<std::pair<std::string, std::string>>* out) {
  if (absl::Status s = CheckOwnFile(path); !s.ok()) return s;
  absl::StatusOr<google::protobuf::Struct> object = ReadJsonObject(path);
  if (!object.ok()) return object.status();
  for (const auto& [key, value] : object->fields()) {
    if (value.has_string_value()) out->emplace_back(key, value.string_value());
    if (value.has_number_value()) out->emplace_back(key, absl::StrCat(static_cast<int64_t>(value.number_value())));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::cluster
