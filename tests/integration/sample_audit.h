// The data audit of integration tests: the sample logs workers write with --sample-log-dir (one
// file per job, generation and rank, a line per step), read back, and the proof that the steps that
// count train every sample of every epoch exactly once.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gradsync::testing {

// One line of a sample log: the step (from 1), the epoch it started in, the samples of one rank.
struct StepSamples {
  int64_t step = 0;
  int epoch = 0;
  std::vector<int64_t> samples;
};

// Every sample log in `dir` (<job>.g<G>.r<R>.samples), by generation, then rank.
std::map<int, std::map<int, std::vector<StepSamples>>> ReadSampleLogs(const std::string& dir);

// The steps that count are each generation's steps up to where the next one resumed (its first
// logged step, less one): a generation's later steps were lost with it. Fails the current test
// unless `generations` generations trained, every step counts once, from 1 with none missing, and
// each of `epochs` epochs trains samples 0..num_samples-1 exactly once.
void ExpectEverySampleOncePerEpoch(const std::map<int, std::map<int, std::vector<StepSamples>>>& logs,
                                   size_t generations, int64_t num_samples, int epochs);

}  // namespace gradsync::testing
