#include "gradsync/ddp/epoch_order.h"

#include <numeric>
#include <utility>

#include "gradsync/core/rng.h"

namespace gradsync::ddp {

uint64_t EpochSeed(uint64_t job_seed, int epoch) {
  return HashCombine(job_seed, 0x5eed0000ULL + static_cast<uint64_t>(epoch));
}

std::vector<int64_t> EpochPermutation(uint64_t epoch_seed, int64_t n) {
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), int64_t{0});
  Rng rng(epoch_seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i) + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

}  // namespace gradsync::ddp
