// Deterministic, platform-independent random numbers. The standard library's distributions are
// implementation-defined, so sample orders and initial weights would differ between builds;
// these do not.
#pragma once

#include <cstdint>

namespace gradsync {

// SplitMix64 finaliser: a bijective mix of 64 bits.
constexpr uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Combines values into one seed, order-sensitive.
constexpr uint64_t HashCombine(uint64_t a, uint64_t b) { return Mix64(a ^ Mix64(b)); }

// A small sequential generator (SplitMix64). Not thread-safe; cheap to copy.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t NextU64() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix64(state_ - 0x9e3779b97f4a7c15ULL);
  }

  // Uniform in [0, bound), without modulo bias (Lemire's method). bound must be > 0.
  uint64_t Below(uint64_t bound);

  // Uniform in [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

  // Standard normal (Box-Muller; one value per call, the pair's second is discarded so that the
  // stream position depends only on the number of calls).
  double Normal();

 private:
  uint64_t state_;
};

}  // namespace gradsync
