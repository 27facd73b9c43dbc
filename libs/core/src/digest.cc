#include "gradsync/core/digest.h"

#include "absl/strings/str_format.h"

namespace gradsync {

uint64_t Fnv1a64(std::span<const std::byte> bytes, uint64_t seed) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t h = seed;
  for (std::byte b : bytes) {
    h ^= static_cast<uint64_t>(b);
    h *= kPrime;
  }
  return h;
}

std::string DigestString(std::span<const std::byte> bytes) { return absl::StrFormat("fnv1a64:%016x", Fnv1a64(bytes)); }

}  // namespace gradsync
