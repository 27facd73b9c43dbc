// The CLI against a server that answers badly on purpose (a broken or hostile coordinator): an
// endless body, a page token that never changes, log pages that never advance. Each ends in a
// clear error, soon, with bounded memory; none loops or buffers without limit.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli_harness.h"
#include "gradsync/http/server.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

class HostileServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    http::ServerOptions options;
    options.listen = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<http::Server>> server =
        http::Server::Start(options, [](const http::Request& r) { return Answer(r); });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    address_ = absl::StrCat("http://127.0.0.1:", server_->port());
  }

  static http::Reply Answer(const http::Request& r) {
    http::Reply reply;
    if (r.path == "/v1/jobs") {
      reply.body = R"({"jobs": [{"name": "jobs/a", "id": "a"}], "nextPageToken": "again"})";
    } else if (r.path == "/v1/jobs/huge") {
      // 80 MiB of one JSON string: more than any answer of the job API, and than the CLI takes.
      reply.body = absl::StrCat(R"({"name": "jobs/huge", "stateReason": ")", std::string(80 << 20, 'x'), R"("})");
    } else if (r.path == "/v1/jobs/stuck/logs") {
      std::string lines;
      for (int i = 0; i < 5000; ++i) {
        absl::StrAppend(&lines, i == 0 ? "" : ",", R"({"seq": "7", "message": "the same line", "rank": 0})");
      }
      reply.body = absl::StrCat(R"({"lines": [)", lines, R"(], "lastSeq": "7"})");
    } else {
      reply.status = 404;
      reply.body = R"({"code": 5, "status": "NOT_FOUND", "message": "no such thing"})";
    }
    return reply;
  }

  CommandResult Cli(std::vector<std::string> args) const {
    args.insert(args.end(), {"--address", address_, "--token", "t"});
    const absl::Time start = absl::Now();
    CommandResult r = RunBinary(args);
    EXPECT_LT(absl::Now() - start, absl::Seconds(30)) << args[1] << " took too long";
    return r;
  }

  std::unique_ptr<http::Server> server_;
  std::string address_;
};

TEST_F(HostileServerTest, AListWhosePageTokenNeverChangesIsAnError) {
  CommandResult list = Cli({"gradsync", "list"});
  EXPECT_EQ(list.exit_code, 1) << list.out;
  EXPECT_TRUE(absl::StrContains(list.err, "page token it had given before")) << list.err;
}

TEST_F(HostileServerTest, AnAnswerLargerThanTheBoundIsNotReadFurther) {
  CommandResult get = Cli({"gradsync", "get", "huge"});
  EXPECT_EQ(get.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(get.err, "larger than 67108864 bytes")) << get.err.substr(0, 500);
}

TEST_F(HostileServerTest, LogPagesThatNeverAdvanceEndAfterOnePrint) {
  CommandResult logs = Cli({"gradsync", "logs", "stuck"});
  EXPECT_EQ(logs.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(logs.err, "do not advance past line 7")) << logs.err;
  // The line is printed once, not once per page.
  EXPECT_EQ(logs.out.find("the same line"), logs.out.rfind("the same line")) << logs.out.size() << " bytes out";
}

}  // namespace
}  // namespace gradsync::testing
