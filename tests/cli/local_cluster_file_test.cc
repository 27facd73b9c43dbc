// The local cluster file: what LocalCluster writes reads back whole, in the schema scripts and
// `gradsync local up`'s output rely on.
#include "gradsync/cluster/local_cluster_file.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gradsync/cluster/local_cluster.h"
#include "gradsync/cluster/own_files.h"
#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

std::string MakeDir() {
  char dir[] = "/tmp/gradsync-cluster-file-test-XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  return dir;
}

cluster::LocalClusterFile Example() {
  return {.endpoints = {{"coordinator", "127.0.0.1:7070"}, {"metricsApi", "127.0.0.1:9100"}},
          .workers = 2,
          .supervisor_pid = 1234,
          .log_dir = "/state/logs",
          .pids = {10, 11, 12, 13},
          .token_files = {{"auth", "/state/tokens/auth.token"}, {"cluster", "/state/tokens/cluster.token"}}};
}

TEST(LocalClusterFile, ReadsBackWhatWasWritten) {
  const std::string dir = MakeDir();
  ASSERT_TRUE(cluster::WriteLocalClusterFile(dir, Example()).ok());
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->endpoints, Example().endpoints);
  EXPECT_EQ(file->workers, 2);
  EXPECT_EQ(file->supervisor_pid, 1234);
  EXPECT_EQ(file->log_dir, "/state/logs");
  EXPECT_EQ(file->pids, (std::vector<pid_t>{10, 11, 12, 13}));
  EXPECT_EQ(file->token_files, Example().token_files);
  EXPECT_FALSE(std::filesystem::exists(cluster::LocalClusterFilePath(dir) + ".tmp"));
}

// Endpoints are top-level strings, so `sed` and flat JSON readers find "coordinator" directly.
TEST(LocalClusterFile, EndpointsAreTopLevelFields) {
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(cluster::LocalClusterFileJson(Example()), &json).ok());
  EXPECT_EQ(json.fields().at("coordinator").string_value(), "127.0.0.1:7070");
  EXPECT_EQ(json.fields().at("pid").number_value(), 1234);
  EXPECT_EQ(json.fields().at("pids").list_value().values_size(), 4);
  EXPECT_NE(cluster::LocalClusterFileJson(Example()).find("\n  \"coordinator\": \"127.0.0.1:7070\",\n"),
            std::string::npos);
}

// The token files are named, never the tokens; a cluster without tokens has no such field.
TEST(LocalClusterFile, TokenFilesAreANestedObjectOfPaths) {
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(cluster::LocalClusterFileJson(Example()), &json).ok());
  EXPECT_EQ(json.fields().at("tokenFiles").struct_value().fields().at("auth").string_value(),
            "/state/tokens/auth.token");
  cluster::LocalClusterFile none = Example();
  none.token_files.clear();
  EXPECT_EQ(cluster::LocalClusterFileJson(none).find("tokenFiles"), std::string::npos);
}

TEST(LocalClusterFile, WithoutASupervisorThereIsNoPid) {
  const std::string dir = MakeDir();
  cluster::LocalClusterFile run = Example();
  run.supervisor_pid = -1;
  ASSERT_TRUE(cluster::WriteLocalClusterFile(dir, run).ok());
  EXPECT_EQ(cluster::LocalClusterFileJson(run).find("\"pid\""), std::string::npos);
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->supervisor_pid, -1);
  EXPECT_EQ(file->pids.size(), 4u);
}

TEST(LocalClusterFile, AbsentOnceRemovedAndRefusedWhenNotAClusterFile) {
  const std::string dir = MakeDir();
  ASSERT_TRUE(cluster::WriteLocalClusterFile(dir, Example()).ok());
  cluster::RemoveLocalClusterFile(dir);
  EXPECT_EQ(cluster::ReadLocalClusterFile(dir).status().code(), absl::StatusCode::kNotFound);
  std::ofstream(cluster::LocalClusterFilePath(dir)) << "{\"coordinator\": [1]}";
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(file.status().message().find(cluster::LocalClusterFilePath(dir)), std::string::npos) << file.status();
}

TEST(LocalClusterFile, AddressesAndPathsAreEscaped) {
  const std::string dir = MakeDir();
  cluster::LocalClusterFile odd = Example();
  odd.log_dir = "/state \"quoted\"\\logs";
  ASSERT_TRUE(cluster::WriteLocalClusterFile(dir, odd).ok());
  absl::StatusOr<cluster::LocalClusterFile> file = cluster::ReadLocalClusterFile(dir);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->log_dir, odd.log_dir);
}

// Another user's directory, or one others may write, could hold a file that sends the cluster's
// token to a listener of theirs: neither is read, and a cluster never starts in one.
TEST(LocalClusterFile, OnlyADirectoryAndFileOfThisUsersAloneAreTrusted) {
  const std::string dir = MakeDir();
  ASSERT_TRUE(cluster::WriteLocalClusterFile(dir, Example()).ok());
  ASSERT_TRUE(cluster::ReadLocalClusterFile(dir).ok());

  std::filesystem::permissions(dir, std::filesystem::perms::all);  // 0777, as /tmp/x left open
  absl::StatusOr<cluster::LocalClusterFile> open = cluster::ReadLocalClusterFile(dir);
  EXPECT_EQ(open.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(open.status().message().find("writable by others (mode 0777)"), std::string::npos) << open.status();
  cluster::LocalClusterOptions options;
  options.state_dir = dir;
  options.workers = 1;
  cluster::LocalCluster refused(options);
  EXPECT_EQ(refused.Start().code(), absl::StatusCode::kFailedPrecondition);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);

  // The file planted by someone else (root can make one owned by nobody; others cannot test this).
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(cluster::LocalClusterFilePath(dir).c_str(), 65534, 65534), 0);
    absl::StatusOr<cluster::LocalClusterFile> planted = cluster::ReadLocalClusterFile(dir);
    EXPECT_EQ(planted.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(planted.status().message().find("belongs to uid 65534"), std::string::npos) << planted.status();
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    EXPECT_NE(cluster::ReadLocalClusterFile(dir).status().message().find("state directory"), std::string::npos);
  }
  // A link in its place is not followed.
  const std::string linked = MakeDir() + "/state";
  std::filesystem::create_directory_symlink(dir, linked);
  EXPECT_NE(cluster::ReadLocalClusterFile(linked).status().message().find("symbolic link"), std::string::npos);
}

TEST(LocalClusterFile, ANewStateDirectoryIsPrivate) {
  const std::string dir = MakeDir() + "/a/b/state";
  ASSERT_TRUE(cluster::MakeOwnDirectory(dir).ok());
  EXPECT_EQ(std::filesystem::status(dir).permissions(), std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace gradsync::cli
