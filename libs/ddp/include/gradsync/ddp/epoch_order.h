// The order of an epoch's samples: a pure function of the job seed and the epoch, the same on every
// platform and build. The native sampler (sampler.h) and the Python package's DistributedSampler
// (python/) both take it from here.
//
// "Each sample once per epoch" means: the order is a bijection of [0, n), so the positions
// 0 .. n-1 of an epoch name every sample index exactly once. Two constructions give it, by size:
//   - n <= kMaterialisedOrderMax: a Fisher-Yates shuffle with gradsync's portable generator, held
//     as a table of n indices (8 bytes a sample, at most 8 MiB). Every order gradsync has given
//     such datasets stays as it was, so runs resumed across versions continue their epoch.
//   - larger n (a dataset of shards of billions of tokens): a keyed Feistel network over the
//     smallest even number of bits that holds n, with cycle-walking (a value outside [0, n) is
//     encrypted again until it falls inside), which is a bijection of [0, n) by construction. It
//     holds nothing per sample: position p maps to its sample in a few hashes (fewer than 4 walks
//     on average, since the network's domain is less than 4n), whatever n is.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace gradsync::ddp {

// The seed of an epoch's permutation; the coordinator's epoch plan hands it out.
uint64_t EpochSeed(uint64_t job_seed, int epoch);

// The largest epoch whose order is a materialised Fisher-Yates table.
inline constexpr int64_t kMaterialisedOrderMax = int64_t{1} << 20;

// The order of one epoch of n samples. Immutable once made; any thread may read it.
class EpochOrder {
 public:
  EpochOrder() = default;
  EpochOrder(uint64_t epoch_seed, int64_t n);

  int64_t size() const { return n_; }
  // The sample at `position` (0 <= position < size()).
  int64_t operator[](int64_t position) const;
  // Whether the order is a table (small epochs) rather than computed per position.
  bool materialised() const { return !table_.empty() || n_ == 0; }

 private:
  // One pass of the Feistel network over [0, 2^(2 * half_bits_)).
  uint64_t Encrypt(uint64_t x) const;

  int64_t n_ = 0;
  std::vector<int64_t> table_;  // n_ <= kMaterialisedOrderMax
  int half_bits_ = 0;
  std::array<uint64_t, 6> round_keys_{};
};

}  // namespace gradsync::ddp
