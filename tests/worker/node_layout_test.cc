// What the node agent runs: the GPUs --gpus selects, each worker's name, device, ports and CPUs,
// and the flags passed on. And a worker that refuses its flags ends the agent (real processes).
#include "node_layout.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "node_agent.h"

namespace gradsync::worker {
namespace {

std::vector<int> Range(int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(i);
  return out;
}

TEST(SelectGpus, AllTheFirstNOrAList) {
  EXPECT_EQ(*SelectGpus("all", 8, true), Range(8));
  EXPECT_EQ(*SelectGpus("3", 8, true), Range(3));
  EXPECT_EQ(*SelectGpus("8", 8, true), Range(8));
  EXPECT_EQ(*SelectGpus("0,2,5", 8, true), (std::vector<int>{0, 2, 5}));
}

TEST(SelectGpus, RefusesTextThatIsNoSelectionNamingTheFlag) {
  for (const std::string bad : {"", "x", "0,x", "-1,2", "2,1", "1,1", "0", "-3", "all,1", "7,"}) {
    const absl::StatusOr<std::vector<int>> got = SelectGpus(bad, 8, true);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(absl::StartsWith(got.status().message(), "--gpus")) << got.status();
  }
}

TEST(SelectGpus, RefusesGpusTheMachineLacks) {
  for (const auto& [request, visible] :
       std::vector<std::pair<std::string, int>>{{"all", 0}, {"1", 0}, {"0,1", 0}, {"9", 8}, {"0,8", 8}}) {
    const absl::StatusOr<std::vector<int>> got = SelectGpus(request, visible, true);
    ASSERT_FALSE(got.ok()) << request;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << request;
    EXPECT_TRUE(absl::StartsWith(got.status().message(), "--gpus " + request + ": ")) << got.status();
  }
  EXPECT_TRUE(absl::StrContains(SelectGpus("all", 0, true).status().message(), "no GPU is visible"));
  EXPECT_TRUE(absl::StrContains(SelectGpus("all", 0, false).status().message(), "this build has no CUDA"));
  EXPECT_TRUE(absl::StrContains(SelectGpus("9", 8, true).status().message(), "8 GPUs are visible"));
}

TEST(OffsetListenPort, RaisesThePortKeepsZeroAndEmpty) {
  EXPECT_EQ(*OffsetListenPort("--metrics_listen", "0.0.0.0:9467", 3), "0.0.0.0:9470");
  EXPECT_EQ(*OffsetListenPort("--metrics_listen", "[::1]:7072", 1), "[::1]:7073");
  EXPECT_EQ(*OffsetListenPort("--metrics_listen", "127.0.0.1:0", 5), "127.0.0.1:0");
  EXPECT_EQ(*OffsetListenPort("--metrics_listen", "", 5), "");
  for (const std::string bad : {"9467", "host:", "host:x", "host:70000"}) {
    const absl::StatusOr<std::string> got = OffsetListenPort("--health_listen", bad, 1);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_TRUE(absl::StartsWith(got.status().message(), "--health_listen \"" + bad + "\"")) << got.status();
  }
  const absl::StatusOr<std::string> beyond = OffsetListenPort("--health_listen", "h:65530", 7);
  ASSERT_FALSE(beyond.ok());
  EXPECT_TRUE(absl::StrContains(beyond.status().message(), "worker 7 would listen on port 65537")) << beyond.status();
}

TEST(SuffixedPath, GoesBeforeTheExtension) {
  EXPECT_EQ(SuffixedPath("/run/w.json", "gpu3"), "/run/w-gpu3.json");
  EXPECT_EQ(SuffixedPath("w", "cpu0"), "w-cpu0");
}

TEST(PlanNodeWorkers, OneWorkerPerSelectedGpu) {
  NodeLayout layout{.binary = "/bin/gradsync-worker",
                    .gpus = {0, 2, 5},
                    .name = "node-a",
                    .metrics_listen = "0.0.0.0:9467",
                    .health_listen = "0.0.0.0:7072",
                    .endpoints_file = "/run/w.json",
                    .cpus = Range(12),
                    .forwarded = {"--blas_threads=2", "--coordinator=c:7070"}};
  const absl::StatusOr<std::vector<NodeWorker>> plan = PlanNodeWorkers(layout);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 3u);
  EXPECT_EQ((*plan)[1].name, "node-a-gpu2");
  EXPECT_EQ((*plan)[1].argv, (std::vector<std::string>{"/bin/gradsync-worker", "--name=node-a-gpu2", "--device=cuda:2",
                                                       "--metrics_listen=0.0.0.0:9469", "--health_listen=0.0.0.0:7074",
                                                       "--endpoints_file=/run/w-gpu2.json", "--cpus=4-7",
                                                       "--blas_threads=2", "--coordinator=c:7070"}));
  EXPECT_EQ((*plan)[2].argv[2], "--device=cuda:5");
  EXPECT_EQ((*plan)[2].argv[3], "--metrics_listen=0.0.0.0:9472");
  EXPECT_EQ((*plan)[2].argv[6], "--cpus=8-11");
}

TEST(PlanNodeWorkers, CpuWorkersAndNoBindingWithoutEnoughCpus) {
  NodeLayout layout{.binary = "w",
                    .cpu_workers = 3,
                    .name = "n",
                    .metrics_listen = "",
                    .health_listen = "127.0.0.1:0",
                    .cpus = {0, 1}};
  const absl::StatusOr<std::vector<NodeWorker>> plan = PlanNodeWorkers(layout);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->size(), 3u);
  EXPECT_EQ((*plan)[2].argv, (std::vector<std::string>{"w", "--name=n-cpu2", "--device=cpu",
                                                       "--metrics_listen=", "--health_listen=127.0.0.1:0"}));
  layout.cpu_workers = 0;
  EXPECT_FALSE(PlanNodeWorkers(layout).ok());
}

// A child that exits with status 2 refused its flags: the agent does not restart it but stops the
// others and returns 2.
TEST(NodeAgent, AChildThatRefusesItsFlagsEndsTheAgent) {
  NodeAgentOptions options;
  options.workers = {{"refuses", {"/bin/sh", "-c", "exit 2"}}, {"sleeps", {"/bin/sleep", "60"}}};
  NodeAgent agent(std::move(options));
  EXPECT_EQ(agent.Run(), 2);
}

}  // namespace
}  // namespace gradsync::worker
