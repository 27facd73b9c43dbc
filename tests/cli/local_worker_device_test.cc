// The --device each worker of a local cluster gets: one GPU per worker as far as they go.
#include "local_cluster.h"

#include "gtest/gtest.h"

namespace gradsync::cli {
namespace {

TEST(LocalWorkerDevice, AutoSpreadsWorkersOverTheGpusOrStaysOnTheCpu) {
  EXPECT_EQ(LocalWorkerDevice("auto", 0, 4), "cuda:0");
  EXPECT_EQ(LocalWorkerDevice("auto", 3, 4), "cuda:3");
  EXPECT_EQ(LocalWorkerDevice("auto", 5, 4), "cuda:1") << "more workers than GPUs share them round robin";
  EXPECT_EQ(LocalWorkerDevice("auto", 1, 1), "cuda:0");
  EXPECT_EQ(LocalWorkerDevice("auto", 2, 0), "cpu");
}

TEST(LocalWorkerDevice, ExplicitDevicesPassThrough) {
  EXPECT_EQ(LocalWorkerDevice("cuda", 2, 2), "cuda:0");
  EXPECT_EQ(LocalWorkerDevice("cuda", 0, 0), "cuda") << "the worker refuses it, naming the flag";
  EXPECT_EQ(LocalWorkerDevice("cpu", 1, 8), "cpu");
  EXPECT_EQ(LocalWorkerDevice("cuda:1", 0, 8), "cuda:1");
}

}  // namespace
}  // namespace gradsync::cli
