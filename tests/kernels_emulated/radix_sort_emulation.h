// cub::DeviceRadixSort::SortPairs on the host, for kernels/cuda/src/encoder.cu in the emulated
// kernel library: the same call shape (a size query with a null temp buffer, then the sort), a
// stable sort of (key, value) pairs by the key bits [begin_bit, end_bit) in cub's order (signed
// keys with their sign bit flipped, so negatives sort first), completed before it returns.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

namespace cub {

struct DeviceRadixSort {
  // What the size query asks for: the emulation sorts in host memory of its own.
  static constexpr size_t kTempBytes = 256;

  template <typename Key, typename Value>
  static cudaError_t SortPairs(void* temp, size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                               const Value* values_in, Value* values_out, int num_items, int begin_bit = 0,
                               int end_bit = sizeof(Key) * 8, cudaStream_t /*stream*/ = nullptr) {
    static_assert(std::is_integral_v<Key>);
    if (temp == nullptr) {
      temp_bytes = kTempBytes;
      return cudaSuccess;
    }
    if (temp_bytes < kTempBytes || num_items < 0 || begin_bit < 0 || end_bit > static_cast<int>(sizeof(Key) * 8) ||
        begin_bit > end_bit) {
      return cudaErrorInvalidValue;
    }
    using Bits = std::make_unsigned_t<Key>;
    const auto digits = [&](Key k) {
      Bits b = static_cast<Bits>(k);
      if constexpr (std::is_signed_v<Key>) b ^= Bits{1} << (sizeof(Key) * 8 - 1);
      const int width = end_bit - begin_bit;
      const Bits mask = width >= static_cast<int>(sizeof(Key) * 8) ? ~Bits{0} : (Bits{1} << width) - 1;
      return static_cast<Bits>((b >> begin_bit) & mask);
    };
    std::vector<size_t> order(static_cast<size_t>(num_items));
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return digits(keys_in[a]) < digits(keys_in[b]); });
    const std::vector<Key> keys(keys_in, keys_in + num_items);
    const std::vector<Value> values(values_in, values_in + num_items);
    for (size_t i = 0; i < order.size(); ++i) {
      keys_out[i] = keys[order[i]];
      values_out[i] = values[order[i]];
    }
    return cudaSuccess;
  }
};

}  // namespace cub
