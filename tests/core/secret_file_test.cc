// Token files hold secrets: a token that can be guessed, read by every user or rewritten by another
// is refused, naming the file and what to do, never quoting the token.
#include "gradsync/core/secret_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

constexpr char kGoodToken[] = "0123456789abcdef0123456789abcdef";

// A directory of its own with `mode`, and in it a file "token" holding `text` with `file_mode`.
std::string TokenFile(const std::string& name, const std::string& text, mode_t file_mode, mode_t dir_mode = 0755) {
  const std::string dir = ::testing::TempDir() + "/secret_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/token";
  std::ofstream(path) << text;
  EXPECT_EQ(::chmod(path.c_str(), file_mode), 0);
  EXPECT_EQ(::chmod(dir.c_str(), dir_mode), 0);
  return path;
}

TEST(ReadTokenFile, APrivateFileGivesItsTokenWithoutTheNewline) {
  const absl::StatusOr<std::string> token = ReadTokenFile(TokenFile("private", std::string(kGoodToken) + "\n", 0600), "the job token");
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, kGoodToken);
  // Group-readable is how Kubernetes mounts a Secret for an fsGroup (defaultMode 0440).
  EXPECT_TRUE(ReadTokenFile(TokenFile("group_read", kGoodToken, 0440), "the job token").ok());
}

TEST(ReadTokenFile, AShortTokenIsRefusedAsGuessable) {
  for (const std::string text : {"x", "x\n", "fifteen-chars!!"}) {
    const absl::StatusOr<std::string> token = ReadTokenFile(TokenFile("short", text, 0600), "the job token");
    ASSERT_EQ(token.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(token.status().message().find("shorter than 16 characters"), std::string::npos) << token.status();
    EXPECT_EQ(token.status().message().find(text), std::string::npos) << "the token is quoted: " << token.status();
  }
  EXPECT_TRUE(ReadTokenFile(TokenFile("sixteen", "sixteen-chars!!!", 0600), "the job token").ok());
}

TEST(ReadTokenFile, ATokenIsOneWordOfVisibleAscii) {
  for (const std::string text : {"0123456789 abcdef0123", "0123456789\nabcdef0123", "0123456789\x1b]52;abcdef"}) {
    EXPECT_EQ(ReadTokenFile(TokenFile("word", text, 0600), "the job token").status().code(),
              absl::StatusCode::kInvalidArgument)
        << text;
  }
}

TEST(ReadTokenFile, AFileEveryUserCanReadInAnOpenDirectoryIsRefused) {
  const std::string path = TokenFile("world", kGoodToken, 0644);
  const absl::StatusOr<std::string> token = ReadTokenFile(path, "the job token");
  ASSERT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied) << token.status();
  EXPECT_NE(token.status().message().find(path), std::string::npos) << token.status();
  EXPECT_NE(token.status().message().find("mode 0644"), std::string::npos) << token.status();
  EXPECT_NE(token.status().message().find("chmod 600"), std::string::npos) << token.status();
  // The same file in a directory only its owner may enter is private.
  EXPECT_TRUE(ReadTokenFile(TokenFile("world_in_private_dir", kGoodToken, 0644, 0700), "the job token").ok());
}

TEST(ReadTokenFile, AFileOthersCanWriteIsRefusedWherever) {
  for (const mode_t mode : {0620, 0602, 0666}) {
    const absl::StatusOr<std::string> token =
        ReadTokenFile(TokenFile("writable", kGoodToken, mode, 0700), "the job token");
    ASSERT_EQ(token.status().code(), absl::StatusCode::kPermissionDenied) << std::oct << mode;
    EXPECT_NE(token.status().message().find("writable by other users"), std::string::npos) << token.status();
  }
}

TEST(ReadTokenFile, AWorldReadableSecretOwnedByAnotherUserIsHowAMountReachesAService) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a file of another user's needs root";
  const std::string path = TokenFile("mounted", kGoodToken, 0644);
  ASSERT_EQ(::chown(path.c_str(), 10001, 10001), 0);
  EXPECT_TRUE(ReadTokenFile(path, "the job token").ok());
}

}  // namespace
}  // namespace gradsync
