// Endpoint files are replaced whole or not at all: a full disk (here a file-size limit, which fails
// writes the way ENOSPC does) leaves the old file as it was. Secret files are read bounded.
#include "gradsync/core/endpoints_file.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gradsync/core/secret_file.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(ReplaceFileAtomically, WritesTheWholeFilePrivately) {
  const std::string path = Dir("endpoints_whole") + "/endpoints.json";
  ASSERT_TRUE(WriteEndpointsFile(path, {{"grpc", "127.0.0.1:7070"}}).ok());
  EXPECT_EQ(Read(path), "{\"grpc\": \"127.0.0.1:7070\"}\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(ReplaceFileAtomically, AFullDiskKeepsTheOldFile) {
  const std::string path = Dir("endpoints_full") + "/endpoints.json";
  ASSERT_TRUE(ReplaceFileAtomically(path, "{\"grpc\": \"old\"}\n").ok());
  // In a child: the limit and the signal it raises are the child's alone.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{8, 8};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const absl::Status s = ReplaceFileAtomically(path, std::string(4096, 'x'));
    ::_exit(s.ok() ? 1 : (s.message().find("cannot write") != std::string::npos ? 0 : 2));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the write was reported written; 2: another error";
  EXPECT_EQ(Read(path), "{\"grpc\": \"old\"}\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(ReplaceFileAtomically, NeverWritesThroughALinkPlantedAsTheTemporaryFile) {
  const std::string dir = Dir("endpoints_link");
  const std::string victim = dir + "/victim";
  std::ofstream(victim) << "keep";
  std::filesystem::create_symlink(victim, dir + "/endpoints.json.tmp");
  ASSERT_TRUE(ReplaceFileAtomically(dir + "/endpoints.json", "new").ok());
  EXPECT_EQ(Read(victim), "keep");
  EXPECT_EQ(Read(dir + "/endpoints.json"), "new");
}

TEST(ReadTokenFile, ADeviceOrAFifoIsRefusedNotReadWithoutEnd) {
  const absl::StatusOr<std::string> zero = ReadTokenFile("/dev/zero", "the job token");
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(zero.status().message().find("/dev/zero"), std::string::npos) << zero.status();
  const std::string fifo = Dir("token_fifo") + "/token";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ReadTokenFile(fifo, "the job token").status().code(), absl::StatusCode::kInvalidArgument);
  const std::string big = Dir("token_big") + "/token";
  std::ofstream(big) << std::string(2 << 20, 'x');
  EXPECT_EQ(ReadTokenFile(big, "the job token").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTokenFile(Dir("token_none") + "/missing", "the job token").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace gradsync
