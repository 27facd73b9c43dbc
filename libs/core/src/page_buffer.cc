#include "gradsync/core/page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

namespace gradsync {
namespace {

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uintptr_t RoundUp(uintptr_t x, size_t page) { return (x + page - 1) / page * page; }
uintptr_t RoundDown(uintptr_t x, size_t page) { return x / page * page; }

}  // namespace

PageBuffer::PageBuffer(size_t count) : count_(count) {
  if (count == 0) return;
  mapped_bytes_ = RoundUp(count * sizeof(float), PageSize());
  void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<float*>(p);
}

PageBuffer::~PageBuffer() {
  if (data_ != nullptr) munmap(data_, mapped_bytes_);
}

PageBuffer::PageBuffer(PageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      count_(std::exchange(other.count_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, mapped_bytes_);
    data_ = std::exchange(other.data_, nullptr);
    count_ = std::exchange(other.count_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
  }
  return *this;
}

void PageBuffer::Release(size_t begin, size_t end) {
  end = std::min(end, count_);
  if (begin >= end) return;
  const size_t page = PageSize();
  const auto lo = reinterpret_cast<uintptr_t>(data_ + begin);
  const auto hi = reinterpret_cast<uintptr_t>(data_ + end);
  const uintptr_t inner_lo = RoundUp(lo, page);
  // The mapping's last page belongs wholly to the array, so a range reaching the end frees it too.
  const uintptr_t inner_hi = end == count_ ? RoundUp(hi, page) : RoundDown(hi, page);
  if (inner_lo >= inner_hi) {
    std::memset(data_ + begin, 0, (end - begin) * sizeof(float));
    return;
  }
  std::memset(data_ + begin, 0, inner_lo - lo);
  if (hi > inner_hi) std::memset(reinterpret_cast<void*>(inner_hi), 0, hi - inner_hi);
  // MADV_DONTNEED on a private anonymous mapping: the pages read as zero from now on.
  madvise(reinterpret_cast<void*>(inner_lo), inner_hi - inner_lo, MADV_DONTNEED);
}

int64_t PageBuffer::ResidentBytes(size_t begin, size_t end) const {
  end = std::min(end, count_);
  if (begin >= end) return 0;
  const size_t page = PageSize();
  const uintptr_t lo = RoundDown(reinterpret_cast<uintptr_t>(data_ + begin), page);
  const uintptr_t hi = RoundUp(reinterpret_cast<uintptr_t>(data_ + end), page);
  std::vector<unsigned char> resident((hi - lo) / page);
  if (mincore(reinterpret_cast<void*>(lo), hi - lo, resident.data()) != 0) return -1;
  int64_t pages = 0;
  for (unsigned char r : resident) pages += r & 1;
  return pages * static_cast<int64_t>(page);
}

}  // namespace gradsync
