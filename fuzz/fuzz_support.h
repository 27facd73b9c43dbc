// What every fuzz target shares: a check that aborts (libFuzzer then saves the input as a crash,
// and the corpus replay test fails), a reader that turns the fuzz input into values, and a
// scratch directory for readers that only take paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace gradsync::fuzz {

// Aborts with the failed condition and `what` when `ok` is false; never compiled out.
inline void Check(bool ok, const char* condition, std::string_view what, const char* file, int line) {
  if (ok) return;
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s (%.*s)\n", file, line, condition, static_cast<int>(what.size()),
               what.data());
  std::abort();
}

#define GRADSYNC_FUZZ_CHECK(condition, what) \
  ::gradsync::fuzz::Check((condition), #condition, (what), __FILE__, __LINE__)

// Reads values off the front of the fuzz input; past its end every read gives zeros / "".
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }
  bool empty() const { return pos_ == size_; }

  template <typename T>
  T Get() {
    T value{};
    const size_t n = remaining() < sizeof(T) ? remaining() : sizeof(T);
    std::memcpy(&value, data_ + pos_, n);
    pos_ += n;
    return value;
  }
  // A value in [0, n) (n > 0).
  uint32_t Below(uint32_t n) { return Get<uint8_t>() % n; }
  // Up to `max` bytes, the count read first.
  std::string Bytes(size_t max) {
    size_t n = Get<uint8_t>() % (max + 1);
    if (n > remaining()) n = remaining();
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }
  // Exactly `n` bytes, or what is left when fewer are.
  std::string Take(size_t n) {
    if (n > remaining()) n = remaining();
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }
  std::string Rest() {
    std::string out(reinterpret_cast<const char*>(data_ + pos_), remaining());
    pos_ = size_;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Discards protobuf's log lines (it logs every string field with invalid UTF-8 that it parses or
// prints, which fuzz inputs are full of), once per process.
void QuietLibraryLogs();

// A directory of this process's own under $TMPDIR (or /tmp), created on first use and removed at
// exit, for readers that take a path: the bytes go to a file there and the reader reads it.
const std::string& ScratchDir();

// Writes `bytes` to ScratchDir()/`name` (replacing it, creating its directories) and returns its
// path; aborts on I/O errors.
std::string WriteScratchFile(const std::string& name, std::string_view bytes);

}  // namespace gradsync::fuzz
