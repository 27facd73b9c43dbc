// Digests of byte ranges, used to check that every replica holds the same parameters.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gradsync {

// 64-bit FNV-1a over `bytes`. Not cryptographic: it detects accidental divergence.
uint64_t Fnv1a64(std::span<const std::byte> bytes, uint64_t seed = 0xcbf29ce484222325ULL);

// "fnv1a64:" followed by 16 lowercase hex digits.
std::string DigestString(std::span<const std::byte> bytes);

}  // namespace gradsync
