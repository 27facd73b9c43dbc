// Sharded data parallel (ddp.sharding) with real processes: every mode trains to the very
// parameters and optimizer state of unsharded training, at world sizes 1 to 4, over shared memory
// and TCP alike (the same bits on both), with a parameter count no world size divides, buckets that shards cut through,
// gradient accumulation and clipping that bites; each rank checkpoints its 1/N of the state.
#include <bit>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_harness.h"
#include "gradsync/ckpt/checkpoint.h"
#include "gradsync/ckpt/weights_file.h"
#include "gtest/gtest.h"

namespace gradsync::testing {
namespace {

// What a run ends with: its weights and its last checkpoint's moments.
struct Trained {
  std::vector<float> params, adam_m, adam_v;
  std::vector<int64_t> part_elements;  // each rank's part of the last checkpoint
  std::string checkpoint;              // its directory
  std::string log;
};

// mlp.yaml with hidden layers of 37 and 19: 32*37+37 + 37*19+19 + 19*10+10 = 2143 parameters,
// which 2, 3 and 4 do not divide. Buckets of at most 128 floats, so shard bounds fall inside
// buckets; a clip of 0.01, far below the gradients' norm, so every step scales them.
Trained Train(const std::string& sharding, int world, const std::string& transport = "auto") {
  const std::string dir = MakeTempDir();
  CommandResult r = RunBinary({"gradsync",
                               "run",
                               ExamplePath("mlp.yaml"),
                               "--state-dir",
                               dir,
                               "--workers",
                               std::to_string(world),
                               "--set",
                               absl::StrCat("training.worldSize=", world),
                               "--set",
                               "model.mlp.hiddenDims=[37, 19]",
                               "--set",
                               "training.maxSteps=12",
                               "--set",
                               "training.epochs=0",
                               "--set",
                               "training.microBatch=8",
                               "--set",
                               "training.gradAccumSteps=2",
                               "--set",
                               "training.gradClip=0.01",
                               "--set",
                               "ddp.bucketCapMb=0.0005",
                               "--set",
                               "ddp.firstBucketMb=0.0002",
                               "--set",
                               "ddp.sharding=" + sharding,
                               "--set",
                               "ddp.transport=" + transport,
                               "-o",
                               "json"});
  Trained t;
  t.log = absl::StrCat(sharding, " at world size ", world, " over ", transport, ": exit ", r.exit_code, "\n", r.out,
                       r.err.substr(r.err.size() > 4000 ? r.err.size() - 4000 : 0));
  if (r.exit_code != 0) return t;
  const std::map<std::string, std::string> summary = ParseFlatJson(r.out);
  absl::StatusOr<ckpt::WeightsFile> weights = ckpt::LoadWeights(summary.at("weightsPath"));
  if (!weights.ok()) return t;
  t.params = weights->values;
  const std::vector<v1::CheckpointManifest> committed =
      ckpt::ListCommitted(dir + "/artifacts/" + summary.at("id") + "/checkpoints");
  if (committed.empty()) return t;
  // Each rank wrote its shard, one copy between them: the parts' shards tile the parameters.
  int64_t next = 0;
  for (const v1::CheckpointPart& part : committed.back().parts()) {
    if (part.shard_begin() != next)
      t.log += absl::StrCat("\nrank ", part.rank(), "'s part starts at ", part.shard_begin());
    next = part.shard_begin() + part.shard_elements();
    t.part_elements.push_back(part.shard_elements());
  }
  t.checkpoint = committed.back().dir();
  absl::StatusOr<ckpt::RankState> state = ckpt::ReadCheckpointState(committed.back(), 0);
  if (!state.ok()) return t;
  t.adam_m = state->adam_m;
  t.adam_v = state->adam_v;
  return t;
}

// Equal bit for bit (not merely ==, which takes -0 for 0).
void ExpectBitwise(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << what << ": element " << i << " is " << got[i] << ", unsharded gives " << want[i];
  }
}

TEST(Sharding, EveryModeTrainsBitwiseLikeUnshardedAtWorldSizesOneToFour) {
  for (int world = 1; world <= 4; ++world) {
    const Trained none = Train("none", world);
    ASSERT_EQ(none.params.size(), 2143u) << none.log;
    ASSERT_EQ(none.adam_m.size(), 2143u) << none.log;
    ASSERT_EQ(none.part_elements.size(), static_cast<size_t>(world)) << none.log;
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(none.part_elements[r], 2143 / world + (r < 2143 % world ? 1 : 0))
          << "rank " << r << " writes its 1/" << world << " of the state, not a whole copy\n"
          << none.log;
    }
    for (const std::string mode : {"optimizer", "gradients", "full"}) {
      SCOPED_TRACE(absl::StrCat(mode, " at world size ", world));
      const Trained sharded = Train(mode, world);
      ASSERT_FALSE(sharded.params.empty()) << sharded.log;
      ExpectBitwise(sharded.params, none.params, "parameters");
      ExpectBitwise(sharded.adam_m, none.adam_m, "AdamW's first moment");
      ExpectBitwise(sharded.adam_v, none.adam_v, "AdamW's second moment");
    }
  }
}

// Over TCP every element is summed in rank order as through shared memory (libs/comm/README.md),
// so every mode over TCP ends with the very bits of the shared-memory run, at 2, 3 and 4 ranks: a
// recovery that moves ranks between hosts changes nothing. The reduce-scatter and all-gather take
// the TCP paths here, not shared memory's.
TEST(Sharding, OverTcpEveryModeEndsWithTheBitsOfSharedMemory) {
  for (int world = 2; world <= 4; ++world) {
    const Trained shm = Train("none", world);
    ASSERT_EQ(shm.params.size(), 2143u) << shm.log;
    for (const std::string mode : {"none", "optimizer", "gradients", "full"}) {
      SCOPED_TRACE(absl::StrCat(mode, " over tcp at world size ", world));
      const Trained tcp = Train(mode, world, "tcp");
      ASSERT_FALSE(tcp.params.empty()) << tcp.log;
      ExpectBitwise(tcp.params, shm.params, "parameters");
      ExpectBitwise(tcp.adam_m, shm.adam_m, "AdamW's first moment");
      ExpectBitwise(tcp.adam_v, shm.adam_v, "AdamW's second moment");
      if (world != 3 || mode == "none") continue;
      // The CLI reads the sharded checkpoints whole, and finds them equal.
      CommandResult diff = RunBinary({"gradsync", "checkpoint", "diff", shm.checkpoint, tcp.checkpoint, "-o", "json"});
      EXPECT_EQ(diff.exit_code, 0) << diff.out << diff.err;
      EXPECT_NE(diff.out.find("\"identical\": true"), std::string::npos) << diff.out;
    }
  }
}

// A mode the spec refuses is named with the problem, before anything runs.
TEST(Sharding, RefusedCombinationsNameTheField) {
  const std::string dir = MakeTempDir();
  CommandResult ignore = RunBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set",
                                    "ddp.sharding=optimizer", "--set", "ddp.ignoreParams=[\"layers.0.\"]"});
  EXPECT_NE(ignore.exit_code, 0);
  EXPECT_NE((ignore.out + ignore.err).find("ddp.sharding: shards every parameter's optimizer state"), std::string::npos)
      << ignore.out << ignore.err;
  CommandResult unknown =
      RunBinary({"gradsync", "run", ExamplePath("mlp.yaml"), "--state-dir", dir, "--set", "ddp.sharding=zero4"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE((unknown.out + unknown.err).find("ddp.sharding: must be one of none, optimizer, gradients, full"),
            std::string::npos)
      << unknown.out << unknown.err;
}

}  // namespace
}  // namespace gradsync::testing
