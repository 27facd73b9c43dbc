// Many jobs submitted at once to a cluster too small to run them together: they queue, and each
// runs on its own gang of the cluster's workers when enough of them free up; none is starved.
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_harness.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "gradsync/v1/job.pb.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kWorkers = 2;

v1::Job GetJob(const std::string& state_dir, const std::string& id) {
  CommandResult r = RunBinary({"gradsync", "get", id, "-o", "json", "--state-dir", state_dir});
  v1::Job job;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out << r.err;
  return job;
}

// The workers of the job's first generation, from its "Scheduled" event ("rank 0 on W (host), ...").
std::vector<std::string> Placement(const v1::Job& job) {
  std::vector<std::string> workers;
  for (const v1::JobEvent& e : job.events()) {
    if (e.type() != "Scheduled") continue;
    for (size_t at = e.message().find(" on "); at != std::string::npos; at = e.message().find(" on ", at + 1)) {
      workers.push_back(e.message().substr(at + 4, e.message().find(' ', at + 4) - at - 4));
    }
    break;
  }
  return workers;
}

TEST(Queue, ManyJobsSubmittedAtOnceAllRunWithoutOversubscribingTheWorkers) {
  const std::string dir = MakeTempDir();
  CommandResult up = RunBinary({"gradsync", "local", "up", "--workers", absl::StrCat(kWorkers), "--state-dir", dir});
  ASSERT_EQ(up.exit_code, 0) << up.err;

  // Submitted concurrently, as many users would: two-rank jobs among one-rank ones.
  const std::vector<int> sizes = {2, 1, 1, 2, 1, 2, 1};
  std::vector<pid_t> submitters;
  for (size_t i = 0; i < sizes.size(); ++i) {
    submitters.push_back(
        StartBinary({"gradsync", "submit", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set",
                     absl::StrCat("name=queued-", i), "--set", absl::StrCat("training.worldSize=", sizes[i]), "--set",
                     "training.epochs=0", "--set", "training.maxSteps=60"},
                    absl::StrCat(dir, "/submit-", i, ".log")));
  }
  std::vector<std::string> ids;
  for (size_t i = 0; i < submitters.size(); ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(submitters[i], &status, 0), submitters[i]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(absl::StrCat(dir, "/submit-", i, ".log"));
    const std::string out = ReadFile(absl::StrCat(dir, "/submit-", i, ".log"));
    ids.push_back(out.substr(0, out.find('\n')));
  }

  std::map<std::string, int> width;
  for (size_t i = 0; i < ids.size(); ++i) {
    width[ids[i]] = sizes[i];
    CommandResult watched = RunBinary({"gradsync", "watch", ids[i], "--state-dir", dir, "-o", "json"});
    EXPECT_EQ(ParseFlatJson(watched.out)["state"], "SUCCEEDED") << ids[i] << ": " << watched.out << watched.err;
  }

  // Every job ran on as many distinct workers as it asked for, all from the cluster's two; and
  // most had to wait for workers to free up.
  std::set<std::string> used;
  std::vector<std::pair<int64_t, int64_t>> runs;  // (scheduled, succeeded)
  for (const std::string& id : ids) {
    const v1::Job job = GetJob(dir, id);
    const std::vector<std::string> placed = Placement(job);
    EXPECT_EQ(static_cast<int>(placed.size()), width[id]) << id;
    EXPECT_EQ(std::set<std::string>(placed.begin(), placed.end()).size(), placed.size()) << id;
    used.insert(placed.begin(), placed.end());
    std::pair<int64_t, int64_t> run{-1, -1};
    for (const v1::JobEvent& e : job.events()) {
      const int64_t t = TimeUtil::TimestampToNanoseconds(e.time());
      if (e.type() == "Scheduled" && run.first < 0) run.first = t;
      if (e.type() == "Succeeded") run.second = t;
    }
    runs.push_back(run);
  }
  EXPECT_EQ(static_cast<int>(used.size()), kWorkers);
  // At most two jobs fit before the first one ends; every other job waited for one to finish.
  const int64_t first_end =
      std::min_element(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
  const auto waited = std::count_if(runs.begin(), runs.end(), [&](auto& r) { return r.first >= first_end; });
  EXPECT_GE(waited, static_cast<int64_t>(sizes.size()) - kWorkers);
  EXPECT_EQ(RunBinary({"gradsync", "local", "down", "--state-dir", dir}).exit_code, 0);
}

}  // namespace
}  // namespace gradsync::testing
