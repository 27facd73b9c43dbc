// `gradsync artifacts list|get` against a real coordinator (auth token on, gRPC and REST) after a
// real worker trained a job: the listing shows weights.bin with its size, every file comes back
// byte-identical over both transports with its SHA-256 checked (sha256sum agrees), a large file
// shows its progress; paths that leave the job's directory (`..`, absolute, a symlink planted in
// it) are refused naming the path field and nothing is written; an unknown job and a missing file
// are NOT_FOUND; no token is UNAUTHENTICATED. A server that lies about the checksum or names a
// path outside the output directory gets nothing written.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/http/server.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "root:$6$not-for-your-eyes";

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The SHA-256 of a file as coreutils' sha256sum computes it: a reference independent of gradsync.
std::string Sha256Sum(const fs::path& path) {
  std::string out;
  FILE* p = ::popen(absl::StrCat("sha256sum '", path.string(), "'").c_str(), "r");
  if (p == nullptr) return "";
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) out += buf;
  ::pclose(p);
  return out.substr(0, out.find(' '));
}

// Every regular file under `dir`, by relative path.
std::vector<std::string> FilesUnder(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_regular_file()) out.push_back(fs::relative(it->path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool EmptyDir(const fs::path& dir) { return !fs::exists(dir) || fs::is_empty(dir); }

class Artifacts : public ::testing::Test {
 protected:
  // One coordinator and one worker for the suite: a job trained once serves every test.
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    children_ = new Children();
    token_ = new std::string(absl::StrCat("artifacts-token-", ::getpid(), "-", absl::ToUnixMicros(absl::Now())));
    std::ofstream(*dir_ + "/token") << *token_ << "\n";
    fs::create_directories(*dir_ + "/etc");
    std::ofstream(*dir_ + "/etc/shadow") << kSecret;
    children_->Start(
        {"gradsync-coordinator", "--listen=127.0.0.1:0", "--rest_listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
         "--state_dir=" + *dir_ + "/state", "--artifact_root=" + *dir_ + "/artifacts",
         "--auth_token_file=" + *dir_ + "/token", "--endpoints_file=" + *dir_ + "/coordinator.json"},
        *dir_ + "/coordinator.log");
    auto endpoints = WaitForEndpoints(*dir_ + "/coordinator.json");
    grpc_ = new std::string(endpoints["grpc"]);
    rest_ = new std::string("http://" + endpoints["rest"]);
    children_->Start(WorkerArgs(*grpc_), *dir_ + "/worker.log");
  }
  static void TearDownTestSuite() {
    delete children_;
    fs::remove_all(*dir_);
    for (std::string* s : {dir_, token_, grpc_, rest_, job_}) delete s;
  }

  void SetUp() override {
    ASSERT_FALSE(grpc_->empty()) << ReadFile(*dir_ + "/coordinator.log");
    if (job_ == nullptr) job_ = new std::string(TrainJob());
    ASSERT_FALSE(job_->empty());
  }

  // Submits mlp.yaml for one worker and one epoch and waits for it to succeed; its id.
  static std::string TrainJob() {
    CommandResult submitted = Cli(
        {"gradsync", "submit", ExamplePath("mlp.yaml"), "--set", "training.worldSize=1", "--set", "training.epochs=1"},
        *grpc_);
    EXPECT_EQ(submitted.exit_code, 0) << submitted.err;
    const std::string name = submitted.out.substr(0, submitted.out.find('\n'));
    const std::string job =
        WaitForJobWith({"--address", *grpc_, "--token", *token_}, name, absl::Seconds(120),
                       [](const std::string& out) { return ParseFlatJson(out)["state"] == "SUCCEEDED"; });
    EXPECT_EQ(ParseFlatJson(job)["state"], "SUCCEEDED") << ReadFile(*dir_ + "/worker.log");
    return absl::StartsWith(name, "jobs/") ? name.substr(5) : "";
  }

  // `gradsync ARGS --address ADDRESS --token TOKEN`.
  static CommandResult Cli(std::vector<std::string> args, const std::string& address) {
    args.insert(args.end(), {"--address", address, "--token", *token_});
    return RunBinary(args);
  }

  static fs::path JobDir() { return fs::path(*dir_) / "artifacts" / *job_; }
  static std::string NewOutDir() { return MakeTempDir() + "/out"; }

  // `artifacts get JOB PATH` over `address` must fail naming the path field, writing nothing.
  void ExpectRefused(const std::string& path, const std::string& address, int exit_code, const std::string& says) {
    const std::string out = NewOutDir();
    CommandResult r = Cli({"gradsync", "artifacts", "get", *job_, path, "-o", out}, address);
    EXPECT_EQ(r.exit_code, exit_code) << path << " over " << address << ": " << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, "path: ")) << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, says)) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(EmptyDir(out)) << path << " over " << address << " wrote something";
    EXPECT_FALSE(absl::StrContains(r.out + r.err, kSecret));
  }

  static std::string* dir_;
  static Children* children_;
  static std::string* token_;
  static std::string* grpc_;
  static std::string* rest_;
  static std::string* job_;
};

std::string* Artifacts::dir_ = nullptr;
Children* Artifacts::children_ = nullptr;
std::string* Artifacts::token_ = nullptr;
std::string* Artifacts::grpc_ = nullptr;
std::string* Artifacts::rest_ = nullptr;
std::string* Artifacts::job_ = nullptr;

TEST_F(Artifacts, ListShowsTheWeightsWithTheirSizeOverBothTransports) {
  const fs::path weights = JobDir() / "weights.bin";
  ASSERT_TRUE(fs::is_regular_file(weights));
  CommandResult table = Cli({"gradsync", "artifacts", "list", *job_}, *grpc_);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  bool found = false;
  for (absl::string_view line : absl::StrSplit(table.out, '\n')) {
    std::vector<std::string> cols = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (!cols.empty() && cols[0] == "weights.bin") {
      found = true;
      ASSERT_GE(cols.size(), 2u) << line;
      EXPECT_EQ(cols[1], std::to_string(fs::file_size(weights))) << line;
    }
  }
  EXPECT_TRUE(found) << table.out;
  EXPECT_EQ(table.out, Cli({"gradsync", "artifacts", "list", *job_}, *rest_).out);
  EXPECT_EQ(table.out, Cli({"gradsync", "artifacts", "list", "jobs/" + *job_}, *grpc_).out);

  CommandResult json = Cli({"gradsync", "artifacts", "list", *job_, "weights", "-o", "json", "--sha256"}, *rest_);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(absl::StrContains(json.out, "\"path\": \"weights.bin\"")) << json.out;
  EXPECT_TRUE(absl::StrContains(json.out, absl::StrCat("\"sizeBytes\": \"", fs::file_size(weights), "\""))) << json.out;
  EXPECT_TRUE(absl::StrContains(json.out, Sha256Sum(weights))) << json.out;
  EXPECT_EQ(json.out, Cli({"gradsync", "artifacts", "list", *job_, "weights", "-o", "json", "--sha256"}, *grpc_).out);
  CommandResult none = Cli({"gradsync", "artifacts", "list", *job_, "no-such-prefix/", "-o", "json"}, *grpc_);
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "{\"artifacts\": []}\n");
}

TEST_F(Artifacts, GetWritesByteIdenticalFilesOverGrpcAndRest) {
  // A file over the progress threshold, spread over many stream messages, beside what the job wrote.
  std::string big(12 << 20, '\0');
  std::mt19937 rng(7);
  for (char& c : big) c = static_cast<char>(rng());
  fs::create_directories(JobDir() / "exports");
  std::ofstream(JobDir() / "exports" / "big.bin", std::ios::binary) << big;

  for (const std::string* address : {grpc_, rest_}) {
    SCOPED_TRACE(*address);
    const std::string out = NewOutDir();
    CommandResult one = Cli({"gradsync", "artifacts", "get", *job_, "weights.bin", "-o", out}, *address);
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(ReadBytes(fs::path(out) / "weights.bin"), ReadBytes(JobDir() / "weights.bin"));
    EXPECT_EQ(one.out, absl::StrCat(Sha256Sum(JobDir() / "weights.bin"), "  ", out, "/weights.bin\n"));
    EXPECT_EQ(FilesUnder(out), std::vector<std::string>{"weights.bin"});

    CommandResult large = Cli({"gradsync", "artifacts", "get", *job_, "exports/big.bin", "-o", out}, *address);
    ASSERT_EQ(large.exit_code, 0) << large.err;
    EXPECT_TRUE(ReadBytes(fs::path(out) / "exports" / "big.bin") == big);
    EXPECT_TRUE(absl::StrContains(large.err, "exports/big.bin  12.0 MiB / 12.0 MiB  100%")) << large.err;

    // Every file of the job, at its relative path.
    const std::string all_dir = NewOutDir();
    CommandResult all = Cli({"gradsync", "artifacts", "get", *job_, "-o", all_dir}, *address);
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_EQ(FilesUnder(all_dir), FilesUnder(JobDir()));
    for (const std::string& f : FilesUnder(JobDir())) {
      EXPECT_TRUE(ReadBytes(fs::path(all_dir) / f) == ReadBytes(JobDir() / f)) << f;
      EXPECT_TRUE(absl::StrContains(all.out, absl::StrCat(Sha256Sum(JobDir() / f), "  ", all_dir, "/", f, "\n")))
          << f << "\n"
          << all.out;
    }
    // The output is sha256sum's: it checks every file again.
    std::ofstream(all_dir + "/../SHA256SUMS") << all.out;
    EXPECT_EQ(std::system(absl::StrCat("sha256sum --quiet -c '", all_dir, "/../SHA256SUMS'").c_str()), 0);
  }
  fs::remove_all(JobDir() / "exports");
}

TEST_F(Artifacts, PathsOutsideTheJobsDirectoryAreRefusedAndNothingIsWritten) {
  // A sibling of the job's directory, and a link planted in it.
  std::ofstream(fs::path(*dir_) / "artifacts" / "secret.txt") << kSecret;
  fs::create_symlink(fs::path(*dir_) / "etc" / "shadow", JobDir() / "escape");
  fs::create_symlink(fs::path(*dir_) / "etc", JobDir() / "etc-link");
  fs::create_directories(JobDir() / "reports");
  for (const std::string* address : {grpc_, rest_}) {
    ExpectRefused("../secret.txt", *address, 2, "\"..\" component");
    ExpectRefused("checkpoints/../../secret.txt", *address, 2, "\"..\" component");
    ExpectRefused(*dir_ + "/etc/shadow", *address, 2, "is absolute");
    ExpectRefused("escape", *address, 2, "symbolic link");
    ExpectRefused("etc-link/shadow", *address, 2, "symbolic link");
    ExpectRefused("missing.bin", *address, 1, "NOT_FOUND");
    ExpectRefused("reports", *address, 2, "is a directory");
  }
  // Neither link is listed.
  CommandResult listed = Cli({"gradsync", "artifacts", "list", *job_}, *grpc_);
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_FALSE(absl::StrContains(listed.out, "escape")) << listed.out;
  EXPECT_FALSE(absl::StrContains(listed.out, "etc-link")) << listed.out;
  fs::remove(JobDir() / "escape");
  fs::remove(JobDir() / "etc-link");
}

TEST_F(Artifacts, UnknownJobIsNotFoundAndNoTokenIsUnauthenticated) {
  for (const std::string* address : {grpc_, rest_}) {
    SCOPED_TRACE(*address);
    const std::string out = NewOutDir();
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"gradsync", "artifacts", "list", "no-such-job"},
          std::vector<std::string>{"gradsync", "artifacts", "get", "no-such-job", "weights.bin", "-o", out},
          std::vector<std::string>{"gradsync", "artifacts", "get", "no-such-job", "-o", out}}) {
      CommandResult r = Cli(args, *address);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_TRUE(absl::StartsWith(r.err, "NOT_FOUND: ")) << r.err;
      EXPECT_TRUE(absl::StrContains(r.err, "no-such-job")) << r.err;
    }
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"gradsync", "artifacts", "list", *job_, "--address", *address},
          std::vector<std::string>{"gradsync", "artifacts", "get", *job_, "weights.bin", "-o", out, "--address",
                                   *address},
          std::vector<std::string>{"gradsync", "artifacts", "get", *job_, "-o", out, "--address", *address}}) {
      CommandResult r = RunBinary(args);
      EXPECT_EQ(r.exit_code, 1) << r.err;
      EXPECT_TRUE(absl::StartsWith(r.err, "UNAUTHENTICATED: ")) << r.err;
      EXPECT_EQ(r.out, "");
    }
    EXPECT_TRUE(EmptyDir(out));
  }
}

// A REST server that is not a coordinator: it serves what the test tells it, to show what the
// CLI does with a copy that does not match its checksum or a listing naming paths outside the
// output directory.
class LyingServer {
 public:
  explicit LyingServer(std::function<http::Reply(const http::Request&)> handler) {
    http::ServerOptions options;
    options.listen = "127.0.0.1:0";
    auto server = http::Server::Start(options, std::move(handler));
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) server_ = *std::move(server);
  }
  std::string address() const { return absl::StrCat("http://127.0.0.1:", server_ ? server_->port() : 0); }

 private:
  std::unique_ptr<http::Server> server_;
};

TEST(ArtifactsFromALyingServer, AMismatchOrAPathOutsideWritesNothing) {
  LyingServer server([](const http::Request& r) -> http::Reply {
    if (absl::EndsWith(r.path, "/artifacts")) {
      return {200, R"({"artifacts": [{"path": "../../escaped.txt"}, {"path": "/tmp/escaped.txt"}]})"};
    }
    // The right length, the wrong digest.
    return {200,
            "the bytes",
            "application/octet-stream",
            {{"X-Checksum-Sha256", "0000000000000000000000000000000000000000000000000000000000000000"}}};
  });
  const std::string base = MakeTempDir();
  const std::string out = base + "/a/b/out";
  CommandResult mismatch =
      RunBinary({"gradsync", "artifacts", "get", "job-1", "dir/weights.bin", "-o", out, "--address", server.address()});
  EXPECT_EQ(mismatch.exit_code, 1) << mismatch.err;
  EXPECT_TRUE(absl::StartsWith(mismatch.err, "DATA_LOSS: path: \"dir/weights.bin\"")) << mismatch.err;
  EXPECT_TRUE(absl::StrContains(mismatch.err, "nothing written")) << mismatch.err;
  EXPECT_EQ(mismatch.out, "");
  EXPECT_TRUE(EmptyDir(base)) << "the directories made for the file stay behind";

  CommandResult outside =
      RunBinary({"gradsync", "artifacts", "get", "job-1", "-o", out, "--address", server.address()});
  EXPECT_EQ(outside.exit_code, 2) << outside.err;
  EXPECT_TRUE(absl::StartsWith(outside.err, "path: \"../../escaped.txt\"")) << outside.err;
  EXPECT_TRUE(EmptyDir(base));
  EXPECT_FALSE(fs::exists(base + "/a/escaped.txt"));
}

}  // namespace
}  // namespace gradsync::testing
