#include "kv_store.h"

#include <thread>

#include "gtest/gtest.h"

namespace gradsync::coordinator {
namespace {

TEST(KvStore, GetWaitsForALaterSet) {
  KvStore kv;
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    kv.Set("j/1", "addr0", "10.0.0.1:1234");
  });
  auto v = kv.Get("j/1", "addr0", absl::Seconds(5));
  setter.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "10.0.0.1:1234");
}

TEST(KvStore, WaitTimesOutNamingMissingKeys) {
  KvStore kv;
  kv.Set("j/1", "a", "x");
  absl::Status s = kv.Wait("j/1", {"a", "b", "c"}, absl::Milliseconds(50));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("b, c"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("a,"), std::string::npos) << s;
}

TEST(KvStore, NamespacesAreSeparate) {
  KvStore kv;
  kv.Set("j/1", "k", "gen1");
  EXPECT_EQ(kv.Get("j/2", "k", absl::ZeroDuration()).status().code(), absl::StatusCode::kDeadlineExceeded);
  kv.Set("j/2", "k", "gen2");
  EXPECT_EQ(*kv.Get("j/1", "k", absl::ZeroDuration()), "gen1");
  EXPECT_EQ(*kv.Get("j/2", "k", absl::ZeroDuration()), "gen2");
}

TEST(KvStore, DroppingANamespaceReleasesWaitersAndForgetsKeys) {
  KvStore kv;
  kv.Set("j/1", "a", "x");
  std::thread dropper([&] {
    absl::SleepFor(absl::Milliseconds(50));
    kv.DropNamespace("j/1");
  });
  absl::Status s = kv.Wait("j/1", {"never"}, absl::Seconds(10));
  dropper.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(kv.NamespaceSizeForTest("j/1"), 0u);
}

TEST(KvStore, AddCountsAndRejectsNonIntegers) {
  KvStore kv;
  EXPECT_EQ(*kv.Add("j/1", "n", 1), 1);
  EXPECT_EQ(*kv.Add("j/1", "n", 5), 6);
  EXPECT_EQ(*kv.Add("j/1", "n", -2), 4);
  kv.Set("j/1", "s", "hello");
  EXPECT_EQ(kv.Add("j/1", "s", 1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(KvStore, ShutdownReleasesWaiters) {
  KvStore kv;
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(50));
    kv.Shutdown();
  });
  EXPECT_EQ(kv.Get("j/1", "k", absl::Seconds(10)).status().code(), absl::StatusCode::kCancelled);
  stopper.join();
}

}  // namespace
}  // namespace gradsync::coordinator
