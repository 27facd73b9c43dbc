#include "gradsync/ddp/epoch_order.h"

#include <cstddef>
#include <numeric>
#include <utility>

#include "gradsync/core/rng.h"

namespace gradsync::ddp {
namespace {

std::vector<int64_t> FisherYates(uint64_t epoch_seed, int64_t n) {
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), int64_t{0});
  Rng rng(epoch_seed);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(i) + 1));
    std::swap(perm[i], perm[j]);
  }
  return perm;
}

// The smallest h with 2^(2h) >= n (h >= 1).
int HalfBits(int64_t n) {
  int h = 1;
  while (h < 31 && (uint64_t{1} << (2 * h)) < static_cast<uint64_t>(n)) ++h;
  return h;
}

}  // namespace

uint64_t EpochSeed(uint64_t job_seed, int epoch) {
  return HashCombine(job_seed, 0x5eed0000ULL + static_cast<uint64_t>(epoch));
}

EpochOrder::EpochOrder(uint64_t epoch_seed, int64_t n) : n_(n < 0 ? 0 : n) {
  if (n_ <= kMaterialisedOrderMax) {
    table_ = FisherYates(epoch_seed, n_);
    return;
  }
  half_bits_ = HalfBits(n_);
  // Keys of their own, apart from the Fisher-Yates stream of the same seed.
  Rng rng(HashCombine(epoch_seed, 0xfe15e1ULL));
  for (uint64_t& key : round_keys_) key = rng.NextU64();
}

uint64_t EpochOrder::Encrypt(uint64_t x) const {
  const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
  uint64_t left = x >> half_bits_, right = x & mask;
  for (const uint64_t key : round_keys_) {
    const uint64_t next = left ^ (HashCombine(key, right) & mask);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

int64_t EpochOrder::operator[](int64_t position) const {
  if (!table_.empty()) return table_[static_cast<std::size_t>(position)];
  // Cycle-walking: the network permutes [0, 2^(2h)); following it from a position inside [0, n)
  // reaches another value inside before it could return to where it started, so this ends, and
  // the map restricted to [0, n) is a bijection.
  uint64_t x = static_cast<uint64_t>(position);
  do {
    x = Encrypt(x);
  } while (x >= static_cast<uint64_t>(n_));
  return static_cast<int64_t>(x);
}

}  // namespace gradsync::ddp
