// A zero-initialised float array whose pages can be given back to the operating system while it
// lives: what lets a rank of a fully sharded job (ddp.sharding "full") hold a layer's gathered
// parameters only while it computes with them, and a reduced gradient only in its own shard.
//
// The array is an anonymous private mapping. Pages cost memory from their first write; Release
// zeroes a range and returns the whole pages inside it (madvise MADV_DONTNEED, after which a page
// reads as zero and costs nothing until written again). Partial pages at the range's ends are
// zeroed in place, so the elements beside the range keep their values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace gradsync {

class PageBuffer {
 public:
  PageBuffer() = default;
  // `count` floats, all zero. Aborts like operator new when the address space is exhausted.
  explicit PageBuffer(size_t count);
  ~PageBuffer();
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  std::span<float> span() { return {data_, count_}; }
  std::span<const float> span() const { return {data_, count_}; }
  size_t size() const { return count_; }

  // Elements [begin, end) read as zero afterwards; the whole pages among them are returned.
  void Release(size_t begin, size_t end);
  // Bytes of elements [begin, end)'s pages that are resident now (mincore), whole pages counted.
  int64_t ResidentBytes(size_t begin, size_t end) const;

 private:
  float* data_ = nullptr;
  size_t count_ = 0;
  size_t mapped_bytes_ = 0;
};

}  // namespace gradsync
