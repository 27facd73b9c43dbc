#include "gradsync/core/cpu_set.h"

#include <sched.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int> AffinityOf(pid_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(tid, sizeof(set), &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

TEST(CpuList, ParsesRangesAndListsSortedWithoutDuplicates) {
  EXPECT_THAT(*ParseCpuList("0-3,6"), ElementsAre(0, 1, 2, 3, 6));
  EXPECT_THAT(*ParseCpuList("3,1,2,2"), ElementsAre(1, 2, 3));
  EXPECT_THAT(*ParseCpuList("5"), ElementsAre(5));
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 6}), "0-3,6");
  EXPECT_EQ(FormatCpuList({1, 3, 5}), "1,3,5");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(CpuList, RefusesMalformedListsNamingThePiece) {
  for (const char* bad : {"a", "3-1", "1-", "-1", "1,,2", "99999", "1-2-3", " 1"}) {
    absl::StatusOr<std::vector<int>> cpus = ParseCpuList(bad);
    ASSERT_FALSE(cpus.ok()) << bad;
    EXPECT_EQ(cpus.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(cpus.status().message()), HasSubstr("cpu list")) << bad;
  }
  EXPECT_THAT(std::string(ParseCpuList("0,x-2").status().message()), HasSubstr("\"x-2\" is not a CPU number"));
  EXPECT_FALSE(ParseCpuList("").ok());
}

TEST(CpuShare, SplitsContiguouslyWithTheRemainderFirst) {
  const std::vector<int> cpus = {0, 1, 2, 3, 4};
  EXPECT_THAT(CpuShare(cpus, 2, 0), ElementsAre(0, 1, 2));
  EXPECT_THAT(CpuShare(cpus, 2, 1), ElementsAre(3, 4));
  EXPECT_THAT(CpuShare(cpus, 5, 4), ElementsAre(4));
  EXPECT_TRUE(CpuShare(cpus, 6, 0).empty()) << "fewer CPUs than workers: no binding";
  EXPECT_TRUE(CpuShare(cpus, 2, 2).empty());
  EXPECT_THAT(CpuShare({4, 9}, 2, 1), ElementsAre(9)) << "the CPUs themselves, not their positions";
}

TEST(BindProcess, BindsThreadsRunningNowAndThoseStartedLater) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  std::atomic<pid_t> other_tid{0};
  absl::Notification bound, checked;
  std::thread other([&] {
    other_tid = static_cast<pid_t>(syscall(SYS_gettid));
    bound.WaitForNotification();
    checked.WaitForNotification();
  });
  while (other_tid.load() == 0) std::this_thread::yield();

  EXPECT_TRUE(BindProcessToCpus({allowed.back()}).ok());
  bound.Notify();
  EXPECT_THAT(AffinityOf(other_tid.load()), ElementsAre(allowed.back())) << "a thread already running";
  std::vector<int> later;
  std::thread([&] { later = AffinityOf(0); }).join();
  EXPECT_THAT(later, ElementsAre(allowed.back())) << "a thread started afterwards";
  checked.Notify();
  other.join();
  EXPECT_TRUE(BindProcessToCpus(allowed).ok());
  EXPECT_EQ(AllowedCpus(), allowed) << "the binding is undone for the tests after this one";
}

TEST(BindProcess, RefusesCpusTheMachineDoesNotHave) {
  const std::vector<int> allowed = AllowedCpus();
  const int missing = get_nprocs_conf();
  const absl::Status s = BindProcessToCpus({0, missing});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat("has no CPU ", missing)));
  EXPECT_EQ(AllowedCpus(), allowed) << "a refused binding changes nothing";
  EXPECT_EQ(BindProcessToCpus({}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
