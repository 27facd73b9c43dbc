// Small rank states and checkpoint directories in temporary directories, for the ckpt tests.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::ckpt::testing {

// Gives each test empty directories of its own under the test temporary directory and removes
// them afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(Base(), ec);
  }

  // An empty directory named `name` inside this test's base directory.
  std::string FreshDir(const std::string& name) const {
    const std::filesystem::path dir = Base() / name;
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir.string();
  }

 private:
  static std::filesystem::path Base() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::filesystem::path(::testing::TempDir()) /
           ("ckpt-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "-" + info->name());
  }
};

// Two tensors, "layer.weight" [2, 3] and "layer.bias" [3], with optimizer state; values depend on
// `shift` so two states differ by it.
inline RankState SmallState(int32_t rank = 0, int32_t world_size = 2, float shift = 0.0f) {
  RankState s;
  s.model.set_preset("mlp");
  s.model.mutable_mlp()->add_hidden_dims(3);
  s.layout.Add("layer.weight", {2, 3}, true);
  s.layout.Add("layer.bias", {3}, false);
  s.params = {1, 2, 3, 4, 5, 6, -1, -2, -3};
  for (float& v : s.params) v += shift;
  s.adam_m = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
  s.adam_v = {1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f, 7e-3f, 8e-3f, 9e-3f};
  s.adam_step = 12;
  s.step = 12;
  s.epoch = 1;
  s.cursor = 384;
  s.rank = rank;
  s.world_size = world_size;
  s.seed = 0xfeedbeefcafeULL;
  s.job_id = "job-7";
  s.generation = 3;
  return s;
}

// Writes every rank's part of a checkpoint at `step` under `root` and, when `commit`, its manifest.
inline v1::CheckpointManifest WriteCheckpoint(const std::string& root, int64_t step, int32_t world_size = 2,
                                              bool commit = true) {
  const std::string dir = CheckpointDir(root, step);
  v1::CheckpointManifest m;
  m.set_job_id("job-7");
  m.set_generation(3);
  m.set_step(step);
  m.set_world_size(world_size);
  m.set_epoch(1);
  m.set_cursor(384);
  m.set_dir(dir);
  for (int32_t r = 0; r < world_size; ++r) {
    RankState s = SmallState(r, world_size);
    s.step = step;
    absl::StatusOr<v1::CheckpointPart> part = WriteRankPart(dir, s);
    EXPECT_TRUE(part.ok()) << part.status();
    if (!part.ok()) return m;
    m.set_total_bytes(m.total_bytes() + part->bytes());
    *m.add_parts() = *part;
  }
  if (commit) {
    EXPECT_TRUE(WriteManifest(dir, m).ok());
  }
  return m;
}

// Overwrites one byte at `offset` (negative: from the end) with its complement.
inline void FlipByte(const std::string& path, std::streamoff offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset, offset < 0 ? std::ios::end : std::ios::beg);
  const char c = static_cast<char>(f.get());
  f.seekp(offset, offset < 0 ? std::ios::end : std::ios::beg);
  f.put(static_cast<char>(~c));
}

inline std::vector<std::string> FileNames(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gradsync::ckpt::testing
