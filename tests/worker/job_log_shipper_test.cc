// A rank's log lines on their way out: every line in its file, the lines shipped in order within
// the rate, drops counted and reported, a coordinator away ridden out, a finished generation's
// refusal taken as final, and messages cut on a character boundary.
#include "job_log_shipper.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace gradsync::worker {
namespace {

namespace fs = std::filesystem;

// What a coordinator received, answering with `answer` until told otherwise.
class Receiver {
 public:
  absl::Status Receive(const v1::ReportLogsRequest& r) {
    absl::MutexLock lock(&mu_);
    ++calls_;
    if (!answer_.ok()) return answer_;
    for (const v1::LogLine& l : r.lines()) messages_.push_back(l.message());
    dropped_ += r.dropped();
    last_ = r;
    return absl::OkStatus();
  }
  void Answer(absl::Status s) {
    absl::MutexLock lock(&mu_);
    answer_ = std::move(s);
  }
  std::vector<std::string> messages() {
    absl::MutexLock lock(&mu_);
    return messages_;
  }
  int64_t dropped() {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  v1::ReportLogsRequest last() {
    absl::MutexLock lock(&mu_);
    return last_;
  }

 private:
  absl::Mutex mu_;
  absl::Status answer_;
  std::vector<std::string> messages_;
  int64_t dropped_ = 0;
  int calls_ = 0;
  v1::ReportLogsRequest last_;
};

v1::ReportLogsRequest Identity() {
  v1::ReportLogsRequest r;
  r.set_worker_id("w1");
  r.set_job_id("job-1");
  r.set_generation(2);
  r.set_rank(1);
  return r;
}

void Log(JobLogShipper& shipper, const std::string& message) {
  shipper.Add(LogRecord{absl::Now(), LogLevel::kInfo, "test.cc:9", message, "job-1", 1});
}

class JobLogShipperTest : public ::testing::Test {
 protected:
  void TearDown() override { fs::remove_all(dir_); }
  SendLogs Send() {
    return [this](const v1::ReportLogsRequest& r) { return receiver_.Receive(r); };
  }
  std::string dir_ = ::testing::TempDir() + "/job-log-shipper-" + std::to_string(::getpid());
  Receiver receiver_;
};

TEST_F(JobLogShipperTest, EveryLineGoesToTheFileAndToTheCoordinatorInOrder) {
  const std::string file = JobLogFile(dir_, "job-1", 1);
  EXPECT_EQ(file, dir_ + "/job-1/rank-1.log");
  {
    JobLogShipper shipper(Identity(), file, Send(), {.interval = absl::Milliseconds(20)});
    for (int i = 0; i < 30; ++i) Log(shipper, "line " + std::to_string(i));
    shipper.Stop(absl::Seconds(5));
    EXPECT_EQ(shipper.sent(), 30);
    EXPECT_EQ(shipper.dropped(), 0);
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 30; ++i) expected.push_back("line " + std::to_string(i));
  EXPECT_EQ(receiver_.messages(), expected);
  const v1::ReportLogsRequest last = receiver_.last();
  EXPECT_EQ(last.worker_id(), "w1");
  EXPECT_EQ(last.job_id(), "job-1");
  EXPECT_EQ(last.generation(), 2);
  ASSERT_GT(last.lines_size(), 0);
  EXPECT_EQ(last.lines(0).level(), "info");
  EXPECT_EQ(last.lines(0).source(), "test.cc:9");
  // The file holds the same lines as `gradsync logs` prints them.
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  ASSERT_EQ(lines.size(), 30u);
  EXPECT_EQ(lines[0].substr(0, 2), "I ");
  EXPECT_NE(lines[0].find(" r1 g2 test.cc:9] line 0\n"), std::string::npos) << lines[0];
}

TEST_F(JobLogShipperTest, OverTheRateLinesAreDroppedCountedAndReported) {
  JobLogShipper shipper(Identity(), "", Send(),
                        {.lines_per_second = 1, .burst = 10, .interval = absl::Milliseconds(20)});
  for (int i = 0; i < 50; ++i) Log(shipper, "burst");
  shipper.Stop(absl::Seconds(5));
  // The burst, and at most a line or two the bucket refilled while the loop ran.
  EXPECT_GE(receiver_.messages().size(), 10u);
  EXPECT_LE(receiver_.messages().size(), 12u);
  EXPECT_EQ(static_cast<int64_t>(receiver_.messages().size()) + receiver_.dropped(), 50);
  EXPECT_EQ(shipper.dropped(), receiver_.dropped());
}

TEST_F(JobLogShipperTest, ACoordinatorAwayIsRiddenOutAndTheQueueStaysBounded) {
  receiver_.Answer(absl::UnavailableError("coordinator restarting"));
  JobLogShipper shipper(Identity(), "", Send(), {.max_queued = 20, .interval = absl::Milliseconds(10)});
  for (int i = 0; i < 30; ++i) Log(shipper, std::to_string(i));
  while (receiver_.calls() < 3) absl::SleepFor(absl::Milliseconds(5));
  receiver_.Answer(absl::OkStatus());
  shipper.Stop(absl::Seconds(5));
  // The newest 20 survive, in order; the 10 oldest are reported dropped.
  std::vector<std::string> expected;
  for (int i = 10; i < 30; ++i) expected.push_back(std::to_string(i));
  EXPECT_EQ(receiver_.messages(), expected);
  EXPECT_EQ(receiver_.dropped(), 10);
}

TEST_F(JobLogShipperTest, AFinishedGenerationsRefusalIsFinal) {
  receiver_.Answer(absl::FailedPreconditionError("job job-1 generation 2 is not running"));
  JobLogShipper shipper(Identity(), "", Send(), {.interval = absl::Milliseconds(10)});
  for (int i = 0; i < 5; ++i) Log(shipper, "late");
  shipper.Stop(absl::Seconds(5));
  EXPECT_EQ(receiver_.calls(), 1) << "no retry of a batch the coordinator will never take";
  EXPECT_EQ(shipper.dropped(), 5);
}

TEST_F(JobLogShipperTest, LongMessagesAreCutOnACharacterBoundary) {
  JobLogShipper shipper(Identity(), "", Send(), {.interval = absl::Milliseconds(10), .max_message_bytes = 8});
  Log(shipper, "abcdefg\xc3\xa9tail");  // é straddles byte 8
  shipper.Stop(absl::Seconds(5));
  ASSERT_EQ(receiver_.messages().size(), 1u);
  EXPECT_EQ(receiver_.messages()[0], "abcdefg...");
}

}  // namespace
}  // namespace gradsync::worker
