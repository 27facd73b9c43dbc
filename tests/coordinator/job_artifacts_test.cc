// A job's artifacts on real directories: listing (sorted, sizes, prefixes, digests), and the
// confinement of every read to the job's own directory against what a worker could plant there
// (symbolic links to files and directories outside, a fifo, a hard link, a path swapped for a link
// after the open); the GetArtifact stream's header, chunks and trailer; and the REST routes over a
// real HTTP server (bytes, Content-Length, X-Checksum-Sha256, refusals with their status).
#include "job_artifacts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "coordinator.h"
#include "gmock/gmock.h"
#include "gradsync/core/sha256.h"
#include "gradsync/http/client.h"
#include "gtest/gtest.h"
#include "http_client.h"
#include "rest_gateway.h"

namespace gradsync::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kSecret[] = "root:$6$not-for-your-eyes";
constexpr char kToken[] = "artifact-token";

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::vector<std::string> Paths(const v1::ListArtifactsResponse& listed) {
  std::vector<std::string> out;
  for (const v1::Artifact& a : listed.artifacts()) out.push_back(a.path());
  return out;
}

// The whole of an opened artifact.
std::string ReadAll(ArtifactFile& file) {
  std::string all, chunk;
  do {
    EXPECT_TRUE(file.Read(1000, &chunk).ok());
    all += chunk;
  } while (!chunk.empty());
  return all;
}

class JobArtifactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::weakly_canonical(fs::path(::testing::TempDir()) / ("job-artifacts-" + std::to_string(::getpid())));
    fs::remove_all(base_);
    fs::create_directories(Job());
    Write(base_ / "etc" / "shadow", kSecret);
    Write(base_ / "artifacts" / "secret.txt", kSecret);  // beside the job's directory
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path Job() const { return base_ / "artifacts" / "job-1"; }
  JobArtifacts Artifacts() const { return JobArtifacts((base_ / "artifacts").string(), "job-1"); }

  // Open(path) must fail with `code`, naming the path field and never quoting the secret.
  std::string Refused(const std::string& path, absl::StatusCode code) const {
    absl::StatusOr<ArtifactFile> file = Artifacts().Open(path);
    EXPECT_EQ(file.status().code(), code) << path << ": " << (file.ok() ? "opened" : file.status().ToString());
    const std::string message(file.status().message());
    EXPECT_THAT(message, HasSubstr("path: ")) << path;
    EXPECT_THAT(message, Not(HasSubstr(kSecret)));
    return message;
  }

  fs::path base_;
};

TEST_F(JobArtifactsTest, ListsRegularFilesSortedWithSizeTimeAndOnRequestDigest) {
  Write(Job() / "weights.bin", "12345");
  Write(Job() / "checkpoints" / "step-00000002" / "rank-00000.bin", RandomBytes(3000, 1));
  Write(Job() / "checkpoints" / "step-00000002" / "MANIFEST.json", "{}");
  Write(Job() / "a" / "b" / "c.txt", "");

  absl::StatusOr<v1::ListArtifactsResponse> all = Artifacts().List("", false);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Paths(*all), ElementsAre("a/b/c.txt", "checkpoints/step-00000002/MANIFEST.json",
                                       "checkpoints/step-00000002/rank-00000.bin", "weights.bin"));
  const v1::Artifact& weights = all->artifacts(3);
  EXPECT_EQ(weights.size_bytes(), 5);
  EXPECT_EQ(all->artifacts(2).size_bytes(), 3000);
  EXPECT_TRUE(weights.sha256().empty()) << "listing hashes nothing unless asked";
  struct stat st;
  ASSERT_EQ(::stat((Job() / "weights.bin").c_str(), &st), 0);
  EXPECT_EQ(weights.modify_time().seconds(), st.st_mtim.tv_sec);
  EXPECT_EQ(weights.modify_time().nanos(), st.st_mtim.tv_nsec);

  EXPECT_THAT(Paths(*Artifacts().List("checkpoints/", false)),
              ElementsAre("checkpoints/step-00000002/MANIFEST.json", "checkpoints/step-00000002/rank-00000.bin"));
  EXPECT_THAT(Paths(*Artifacts().List("check", false)), ::testing::SizeIs(2));
  EXPECT_THAT(Paths(*Artifacts().List("checkpoints/step-00000002/rank", false)),
              ElementsAre("checkpoints/step-00000002/rank-00000.bin"));
  EXPECT_THAT(Paths(*Artifacts().List("weights.bin", false)), ElementsAre("weights.bin"));
  EXPECT_TRUE(Artifacts().List("nothing/", false)->artifacts().empty());

  absl::StatusOr<v1::ListArtifactsResponse> hashed = Artifacts().List("", true);
  ASSERT_TRUE(hashed.ok()) << hashed.status();
  EXPECT_EQ(hashed->artifacts(3).sha256(), Sha256Hex("12345"));
  EXPECT_EQ(hashed->artifacts(2).sha256(), Sha256Hex(RandomBytes(3000, 1)));
  EXPECT_EQ(hashed->artifacts(0).sha256(), Sha256Hex(""));

  for (const char* bad : {"/etc", "../", "a/../../", "a//"}) {
    absl::StatusOr<v1::ListArtifactsResponse> refused = Artifacts().List(bad, false);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("prefix: ")) << bad;
  }
}

TEST_F(JobArtifactsTest, AJobThatWroteNothingHasNoArtifacts) {
  JobArtifacts none((base_ / "artifacts").string(), "job-2");
  absl::StatusOr<v1::ListArtifactsResponse> listed = none.List("", false);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->artifacts().empty());
  absl::StatusOr<ArtifactFile> file = none.Open("weights.bin");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("path: \"weights.bin\""));
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("job-2"));
}

TEST_F(JobArtifactsTest, LinksFifosAndHardLinksAreNeitherListedNorOpened) {
  Write(Job() / "weights.bin", "weights");
  fs::create_symlink(base_ / "etc" / "shadow", Job() / "escape");
  fs::create_symlink(base_ / "etc", Job() / "etc-link");
  fs::create_symlink("weights.bin", Job() / "inside-link");
  fs::create_directories(Job() / "sub");
  fs::create_symlink(base_ / "etc" / "shadow", Job() / "sub" / "deep-escape");
  ASSERT_EQ(::mkfifo((Job() / "pipe").c_str(), 0600), 0);
  fs::create_hard_link(base_ / "etc" / "shadow", Job() / "hard");

  absl::StatusOr<v1::ListArtifactsResponse> listed = Artifacts().List("", true);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(Paths(*listed), ElementsAre("weights.bin"));

  EXPECT_THAT(Refused("escape", absl::StatusCode::kInvalidArgument), HasSubstr("symbolic link"));
  EXPECT_THAT(Refused("inside-link", absl::StatusCode::kInvalidArgument), HasSubstr("symbolic link"));
  EXPECT_THAT(Refused("etc-link/shadow", absl::StatusCode::kInvalidArgument),
              HasSubstr("\"etc-link\" is a symbolic link"));
  EXPECT_THAT(Refused("sub/deep-escape", absl::StatusCode::kInvalidArgument), HasSubstr("symbolic link"));
  // A fifo is refused at once, without waiting for a writer.
  EXPECT_THAT(Refused("pipe", absl::StatusCode::kInvalidArgument), HasSubstr("not a regular file"));
  EXPECT_THAT(Refused("hard", absl::StatusCode::kInvalidArgument), HasSubstr("hard links"));
  EXPECT_THAT(Refused("sub", absl::StatusCode::kInvalidArgument), HasSubstr("is a directory"));
}

TEST_F(JobArtifactsTest, PathsMustBeRelativeAndStayInside) {
  Write(Job() / "a" / "b.txt", "b");
  EXPECT_THAT(Refused("", absl::StatusCode::kInvalidArgument), HasSubstr("required"));
  EXPECT_THAT(Refused((base_ / "etc" / "shadow").string(), absl::StatusCode::kInvalidArgument), HasSubstr("absolute"));
  EXPECT_THAT(Refused("../secret.txt", absl::StatusCode::kInvalidArgument), HasSubstr("\"..\""));
  EXPECT_THAT(Refused("a/../../secret.txt", absl::StatusCode::kInvalidArgument), HasSubstr("\"..\""));
  EXPECT_THAT(Refused("a/..", absl::StatusCode::kInvalidArgument), HasSubstr("\"..\""));
  EXPECT_THAT(Refused("./a/b.txt", absl::StatusCode::kInvalidArgument), HasSubstr("\".\""));
  EXPECT_THAT(Refused("a//b.txt", absl::StatusCode::kInvalidArgument), HasSubstr("empty"));
  EXPECT_THAT(Refused("a/b.txt/", absl::StatusCode::kInvalidArgument), HasSubstr("empty"));
  EXPECT_THAT(Refused(std::string("a\0b", 3), absl::StatusCode::kInvalidArgument), HasSubstr("NUL"));
  EXPECT_THAT(Refused("a/missing.txt", absl::StatusCode::kNotFound), HasSubstr("\"a/missing.txt\""));
  EXPECT_THAT(Refused("a/b.txt/c", absl::StatusCode::kNotFound), HasSubstr("\"a/b.txt/c\""));

  absl::StatusOr<ArtifactFile> file = Artifacts().Open("a/b.txt");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->info().path(), "a/b.txt");
  EXPECT_EQ(file->info().size_bytes(), 1);
  EXPECT_EQ(ReadAll(*file), "b");
}

TEST_F(JobArtifactsTest, ReadsTheFileItOpenedWhateverThePathBecomes) {
  Write(Job() / "weights.bin", "the real weights");
  absl::StatusOr<ArtifactFile> file = Artifacts().Open("weights.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  // A worker swaps the file for a link to a secret after the open: the descriptor still reads the
  // file that was checked.
  fs::rename(Job() / "weights.bin", Job() / "old.bin");
  fs::create_symlink(base_ / "etc" / "shadow", Job() / "weights.bin");
  EXPECT_EQ(ReadAll(*file), "the real weights");
  EXPECT_THAT(Refused("weights.bin", absl::StatusCode::kInvalidArgument), HasSubstr("symbolic link"));
}

TEST_F(JobArtifactsTest, SendArtifactStreamsHeaderChunksAndTrailer) {
  const std::string bytes = RandomBytes(2 * kArtifactChunkBytes + 12345, 7);
  Write(Job() / "big.bin", bytes);
  absl::StatusOr<ArtifactFile> file = Artifacts().Open("big.bin");
  ASSERT_TRUE(file.ok()) << file.status();
  std::vector<v1::GetArtifactResponse> sent;
  absl::Status s = SendArtifact(
      *file,
      [&](const v1::GetArtifactResponse& m) {
        sent.push_back(m);
        return true;
      },
      [] { return false; });
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(sent.size(), 5u);
  ASSERT_TRUE(sent[0].has_header());
  EXPECT_EQ(sent[0].header().path(), "big.bin");
  EXPECT_EQ(sent[0].header().size_bytes(), static_cast<int64_t>(bytes.size()));
  std::string received;
  for (size_t i = 1; i < 4; ++i) {
    ASSERT_EQ(sent[i].part_case(), v1::GetArtifactResponse::kData);
    EXPECT_LE(sent[i].data().size(), kArtifactChunkBytes);
    received += sent[i].data();
  }
  EXPECT_EQ(received, bytes);
  ASSERT_TRUE(sent[4].has_trailer());
  EXPECT_EQ(sent[4].trailer().size_bytes(), static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(sent[4].trailer().sha256(), Sha256Hex(bytes));

  // A client that goes away ends the stream.
  absl::StatusOr<ArtifactFile> again = Artifacts().Open("big.bin");
  ASSERT_TRUE(again.ok());
  int writes = 0;
  EXPECT_EQ(SendArtifact(
                *again, [&](const v1::GetArtifactResponse&) { return ++writes < 2; }, [] { return false; })
                .code(),
            absl::StatusCode::kCancelled);
  EXPECT_EQ(writes, 2);
}

TEST_F(JobArtifactsTest, HashArtifactIsBoundedAndLeavesTheFileToBeReadAgain) {
  Write(Job() / "weights.bin", "0123456789");
  absl::StatusOr<ArtifactFile> file = Artifacts().Open("weights.bin");
  ASSERT_TRUE(file.ok());
  absl::StatusOr<std::string> over = HashArtifact(*file, 9);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("path: \"weights.bin\" is 10 bytes"));
  absl::StatusOr<std::string> sha256 = HashArtifact(*file, 10);
  ASSERT_TRUE(sha256.ok()) << sha256.status();
  EXPECT_EQ(*sha256, Sha256Hex("0123456789"));
  std::string again;
  ASSERT_TRUE(file->Read(100, &again).ok());
  EXPECT_EQ(again, "0123456789");
}

// The REST routes through a real server, against a coordinator whose artifact root is on disk.
class ArtifactRestTest : public JobArtifactsTest {
 protected:
  void SetUp() override {
    JobArtifactsTest::SetUp();
    CoordinatorOptions options;
    options.artifact_root = (base_ / "artifacts").string();
    c_ = std::make_unique<Coordinator>(options, std::make_unique<InMemoryJobStore>());
    v1::JobSpec spec;
    spec.mutable_training()->set_max_steps(10);
    absl::StatusOr<v1::Job> job = c_->CreateJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    id_ = job->id();
    RestOptions rest;
    rest.listen = "127.0.0.1:0";
    rest.auth = TokenAuth(kToken);
    rest.max_artifact_bytes = 3 << 20;
    auto g = RestGateway::Start(c_.get(), rest);
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = *std::move(g);
  }
  void TearDown() override {
    gateway_.reset();
    c_.reset();
    JobArtifactsTest::TearDown();
  }

  fs::path Dir() const { return base_ / "artifacts" / id_; }

  gradsync::testing::HttpResponse Get(const std::string& path, const std::string& token = kToken) const {
    std::map<std::string, std::string> headers;
    if (!token.empty()) headers["Authorization"] = absl::StrCat("Bearer ", token);
    return gradsync::testing::HttpRequest("GET", gateway_->port(), path, headers);
  }

  std::unique_ptr<Coordinator> c_;
  std::unique_ptr<RestGateway> gateway_;
  std::string id_;
};

TEST_F(ArtifactRestTest, ListsAndServesBytesWithLengthAndDigest) {
  auto empty = Get("/v1/jobs/" + id_ + "/artifacts");
  EXPECT_EQ(empty.status, 200) << empty.body;
  EXPECT_EQ(empty.body, "{\"artifacts\": []}\n");

  const std::string bytes = RandomBytes(2 * kArtifactChunkBytes + 1, 3);
  Write(Dir() / "weights.bin", bytes);
  // A name that ends like another route is still an artifact.
  Write(Dir() / "reports" / "x:cancel", "c");
  Write(Dir() / "reports" / "events", "e");

  auto listed = Get("/v1/jobs/" + id_ + "/artifacts?prefix=weights&sha256=true");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_THAT(listed.body, HasSubstr("\"path\": \"weights.bin\""));
  EXPECT_THAT(listed.body, HasSubstr(absl::StrCat("\"sizeBytes\": \"", bytes.size(), "\"")));
  EXPECT_THAT(listed.body, HasSubstr(Sha256Hex(bytes)));
  EXPECT_THAT(listed.body, Not(HasSubstr("reports/")));
  auto bad_flag = Get("/v1/jobs/" + id_ + "/artifacts?sha256=yes");
  EXPECT_EQ(bad_flag.status, 400);
  EXPECT_THAT(bad_flag.body, HasSubstr("sha256: "));

  auto got = Get("/v1/jobs/" + id_ + "/artifacts/weights.bin");
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.headers["content-type"], "application/octet-stream");
  EXPECT_EQ(got.headers["content-length"], std::to_string(bytes.size()));
  EXPECT_EQ(got.headers["x-checksum-sha256"], Sha256Hex(bytes));
  EXPECT_TRUE(got.body == bytes);
  EXPECT_EQ(Get("/v1/jobs/" + id_ + "/artifacts/reports/x:cancel").body, "c");
  EXPECT_EQ(Get("/v1/jobs/" + id_ + "/artifacts/reports/events").body, "e");
}

// The peak memory of this process (the coordinator's gateway runs in it), from /proc.
int64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// A download of 256 MiB goes out a piece at a time: the gateway's memory grows by far less than
// the file (it once held the file twice over per download).
TEST_F(ArtifactRestTest, ALargeDownloadIsNeverHeldWholeInMemory) {
  RestOptions rest;
  rest.listen = "127.0.0.1:0";
  rest.auth = TokenAuth(kToken);
  rest.max_artifact_bytes = int64_t{1} << 30;
  absl::StatusOr<std::unique_ptr<RestGateway>> big = RestGateway::Start(c_.get(), rest);
  ASSERT_TRUE(big.ok()) << big.status();
  constexpr int64_t kMiB = 1 << 20, kSize = 256 * kMiB;
  fs::create_directories(Dir());
  {
    std::ofstream out(Dir() / "large.bin", std::ios::binary);
    std::string block(kMiB, '\0');
    for (int64_t i = 0; i < kSize / kMiB; ++i) {
      block[0] = static_cast<char>(i);
      out.write(block.data(), kMiB);
    }
  }
  const int64_t before = PeakRssBytes();
  http::HttpRequest request;
  request.url = absl::StrCat("http://127.0.0.1:", (*big)->port(), "/v1/jobs/", id_, "/artifacts/large.bin");
  request.bearer_token = kToken;
  request.timeout = absl::Seconds(120);
  int64_t received = 0;
  request.on_body = [&received](const http::HttpResponse&, absl::string_view piece) {
    received += static_cast<int64_t>(piece.size());
    return absl::OkStatus();
  };
  absl::StatusOr<http::HttpResponse> got = http::SendHttp(request, "the gateway");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(received, kSize);
  EXPECT_LT(PeakRssBytes() - before, 64 * kMiB) << "the download was held in memory";
}

TEST_F(ArtifactRestTest, RefusesWithTheStatusOfEachProblem) {
  Write(Dir() / "weights.bin", "w");
  Write(Dir() / "big.bin", RandomBytes((3 << 20) + 1, 5));
  fs::create_symlink(base_ / "etc" / "shadow", Dir() / "escape");
  const std::string artifacts = "/v1/jobs/" + id_ + "/artifacts/";
  struct Case {
    std::string path;
    int status;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {artifacts + "../secret.txt", 400, "component; artifacts are read only inside"},
           {artifacts + "%2e%2e/%2e%2e/etc/shadow", 400, "component; artifacts are read only inside"},
           {artifacts + "/" + (base_ / "etc" / "shadow").string(), 400, "absolute"},
           {artifacts + "escape", 400, "symbolic link"},
           {artifacts + "missing.bin", 404, "missing.bin\\\": job " + id_ + " has no such artifact"},
           {artifacts + "big.bin", 413, "over the REST gateway's limit"},
           {"/v1/jobs/no-such-job/artifacts/weights.bin", 404, "no-such-job"},
           {"/v1/jobs/no-such-job/artifacts", 404, "no-such-job"},
       }) {
    auto r = Get(c.path);
    EXPECT_EQ(r.status, c.status) << c.path << ": " << r.body;
    EXPECT_THAT(r.body, HasSubstr(c.says)) << c.path;
    if (r.status == 400) {
      EXPECT_THAT(r.body, HasSubstr("\"message\": \"path: ")) << c.path;
    }
    EXPECT_THAT(r.body, Not(HasSubstr(kSecret))) << c.path;
    EXPECT_EQ(r.headers.count("x-checksum-sha256"), 0u) << c.path;
  }
  for (const std::string& path : {artifacts + "weights.bin", "/v1/jobs/" + id_ + "/artifacts"}) {
    auto anonymous = Get(path, "");
    EXPECT_EQ(anonymous.status, 401) << path;
    EXPECT_THAT(anonymous.body, Not(HasSubstr("\"w\"")));
    EXPECT_EQ(Get(path, "wrong").status, 401) << path;
  }
  auto post = gradsync::testing::HttpRequest("POST", gateway_->port(), artifacts + "weights.bin",
                                             {{"Authorization", absl::StrCat("Bearer ", kToken)}});
  EXPECT_EQ(post.status, 405) << post.body;
}

}  // namespace
}  // namespace gradsync::coordinator
