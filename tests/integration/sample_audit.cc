#include "sample_audit.h"

#include <climits>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace gradsync::testing {

std::map<int, std::map<int, std::vector<StepSamples>>> ReadSampleLogs(const std::string& dir) {
  std::map<int, std::map<int, std::vector<StepSamples>>> logs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();  // <job>.g<G>.r<R>.samples
    const size_t g = name.rfind(".g"), r = name.rfind(".r");
    int gen = 0, rank = 0;
    if (g == std::string::npos || r == std::string::npos || !absl::SimpleAtoi(name.substr(g + 2, r - g - 2), &gen) ||
        !absl::SimpleAtoi(name.substr(r + 2, name.find(".samples") - r - 2), &rank)) {
      ADD_FAILURE() << "unexpected file " << name;
      continue;
    }
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      StepSamples s;
      int64_t cursor = 0;
      fields >> s.step >> s.epoch >> cursor;
      for (int64_t i; fields >> i;) s.samples.push_back(i);
      logs[gen][rank].push_back(std::move(s));
    }
  }
  return logs;
}

void ExpectEverySampleOncePerEpoch(const std::map<int, std::map<int, std::vector<StepSamples>>>& logs,
                                   size_t generations, int64_t num_samples, int epochs) {
  ASSERT_EQ(logs.size(), generations) << "generations that trained";
  std::map<int, int64_t> first_step;
  for (const auto& [gen, ranks] : logs) first_step[gen] = ranks.at(0).front().step;
  std::map<int64_t, int> step_owner;
  std::map<int, std::multiset<int64_t>> seen;  // epoch -> samples
  for (const auto& [gen, ranks] : logs) {
    auto next = first_step.upper_bound(gen);
    const int64_t end = next == first_step.end() ? INT64_MAX : next->second - 1;
    for (const auto& [rank, steps] : ranks) {
      for (const StepSamples& s : steps) {
        if (s.step > end) continue;  // trained after the point the next generation resumed from: undone
        if (rank == 0) {
          EXPECT_TRUE(step_owner.emplace(s.step, gen).second) << "step " << s.step << " counted twice";
        }
        for (int64_t i : s.samples) seen[s.epoch].insert(i);
      }
    }
  }
  ASSERT_EQ(static_cast<int>(seen.size()), epochs);
  for (const auto& [epoch, indices] : seen) {
    EXPECT_EQ(static_cast<int64_t>(indices.size()), num_samples) << "epoch " << epoch;
    std::set<int64_t> distinct(indices.begin(), indices.end());
    EXPECT_EQ(distinct.size(), indices.size()) << "a sample repeated in epoch " << epoch;
    EXPECT_EQ(*distinct.begin(), 0);
    EXPECT_EQ(*distinct.rbegin(), num_samples - 1);
  }
  ASSERT_FALSE(step_owner.empty());
  EXPECT_EQ(step_owner.begin()->first, 1);
  EXPECT_EQ(static_cast<int64_t>(step_owner.size()), step_owner.rbegin()->first) << "no step missing";
}

}  // namespace gradsync::testing
