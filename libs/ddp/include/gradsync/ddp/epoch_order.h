// The order of an epoch's samples: a pure function of the job seed and the epoch, the same on every
// platform and build. The native sampler (sampler.h) and the Python package's DistributedSampler
// (python/) both take it from here.
#pragma once

#include <cstdint>
#include <vector>

namespace gradsync::ddp {

// The seed of an epoch's permutation; the coordinator's epoch plan hands it out.
uint64_t EpochSeed(uint64_t job_seed, int epoch);

// The permutation of [0, n) for an epoch seed. Fisher-Yates with gradsync's portable generator,
// so every platform and build gives the same order.
std::vector<int64_t> EpochPermutation(uint64_t epoch_seed, int64_t n);

}  // namespace gradsync::ddp
