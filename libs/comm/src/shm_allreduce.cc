#include "shm_allreduce.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <ctime>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gradsync/comm/communicator.h"

namespace gradsync::comm::internal {
namespace {

constexpr uint64_t kMagic = 0x6772647379'6e6331ULL;  // "grdsync1"
constexpr size_t kPage = 4096;
constexpr size_t kLine = 64;
// Spins before sleeping: about a microsecond each. Short, because on a host with every core busy
// the peer being waited for may need this very core.
constexpr int kSpins = 200;
// A sleeping waiter looks at the deadline and the abort word at least this often (Abort's wake-up
// can fall between a waiter's look and its sleep; this bounds how late it notices).
constexpr absl::Duration kPoll = absl::Milliseconds(5);

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }
size_t DataOffset(int ranks) { return RoundUp(kPage + kLine * static_cast<size_t>(ranks), kPage); }

// v has reached `round` (counters wrap after 2^32 rounds).
bool Reached(uint32_t v, uint32_t round) { return static_cast<int32_t>(v - round) >= 0; }

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

absl::Status EndedBy(uint32_t aborted) {
  return absl::AbortedError(absl::StrCat("rank ", aborted - 1, " ended the shared-memory group"));
}

void FutexWait(std::atomic<uint32_t>* word, uint32_t seen, absl::Duration timeout) {
  const timespec ts = absl::ToTimespec(timeout);
  // Shared futex (no FUTEX_PRIVATE_FLAG): the word lives in memory other processes map.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

struct ShmAllReduce::Header {
  uint64_t magic;
  uint64_t token;
  uint64_t slot_bytes;
  uint32_t ranks;
  std::atomic<uint32_t> aborted;  // 0, or 1 + the rank that aborted the group
};

struct alignas(kLine) ShmAllReduce::RankWords {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> reduced;
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain 32-bit words");

size_t ShmAllReduce::SegmentBytes(int ranks, size_t slot_bytes) {
  return DataOffset(ranks) + (static_cast<size_t>(ranks) + 1) * slot_bytes;
}

void ShmAllReduce::Format(const ShmSegment& segment, int ranks, size_t slot_bytes, uint64_t token) {
  auto* h = new (segment.data()) Header{};
  for (int r = 0; r < ranks; ++r) new (segment.data() + kPage + kLine * r) RankWords{};
  h->token = token;
  h->slot_bytes = slot_bytes;
  h->ranks = static_cast<uint32_t>(ranks);
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
}

absl::StatusOr<std::unique_ptr<ShmAllReduce>> ShmAllReduce::Attach(ShmSegment segment, int rank, int ranks,
                                                                   size_t slot_bytes, uint64_t token) {
  if (segment.size() != SegmentBytes(ranks, slot_bytes)) {
    return absl::FailedPreconditionError(absl::StrCat(segment.name(), " has the wrong size"));
  }
  const auto* h = reinterpret_cast<const Header*>(segment.data());
  if (h->magic != kMagic || h->token != token || h->ranks != static_cast<uint32_t>(ranks) ||
      h->slot_bytes != slot_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(segment.name(), " is not this group's segment"));
  }
  return std::unique_ptr<ShmAllReduce>(new ShmAllReduce(std::move(segment), rank, ranks, slot_bytes));
}

ShmAllReduce::ShmAllReduce(ShmSegment segment, int rank, int ranks, size_t slot_bytes)
    : segment_(std::move(segment)), rank_(rank), ranks_(ranks), slot_bytes_(slot_bytes) {}

ShmAllReduce::Header* ShmAllReduce::header() const { return reinterpret_cast<Header*>(segment_.data()); }

ShmAllReduce::RankWords* ShmAllReduce::words(int rank) const {
  return reinterpret_cast<RankWords*>(segment_.data() + kPage + kLine * rank);
}

std::byte* ShmAllReduce::slot(int rank) const {
  return segment_.data() + DataOffset(ranks_) + static_cast<size_t>(rank) * slot_bytes_;
}

std::byte* ShmAllReduce::result() const {
  return segment_.data() + DataOffset(ranks_) + static_cast<size_t>(ranks_) * slot_bytes_;
}

template <class RoundFn>
absl::Status ShmAllReduce::Rounds(size_t count, size_t elem, RoundFn round) {
  // Once the group has ended, this rank's slot may still be read by a peer finishing a round:
  // write nothing more.
  if (const uint32_t by = header()->aborted.load(std::memory_order_acquire); by != 0) return EndedBy(by);
  const size_t per_round = slot_bytes_ / elem;
  for (size_t offset = 0; offset < count; offset += per_round) {
    if (absl::Status s = round(offset, std::min(per_round, count - offset)); !s.ok()) {
      AbortAs(rank_);  // the others may still read this rank's slot: no rank goes on alone
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ShmAllReduce::Run(void* data, size_t count, size_t elem, ReduceFn fn, absl::Time deadline) {
  auto* bytes = static_cast<std::byte*>(data);
  return Rounds(count, elem, [&](size_t offset, size_t c) {
    std::byte* chunk = bytes + offset * elem;
    // Plain variables: clang before 16 lets no lambda capture a structured binding.
    const std::pair<int64_t, int64_t> block = BlockRange(static_cast<int64_t>(c), ranks_, rank_);
    const auto lo = static_cast<size_t>(block.first), hi = static_cast<size_t>(block.second);
    return Round([&] { std::memcpy(slot(rank_), chunk, c * elem); }, [&] { ReduceInto(result(), lo, hi, elem, fn); },
                 [&] { std::memcpy(chunk, result(), c * elem); }, deadline);
  });
}

absl::Status ShmAllReduce::ReduceScatter(void* data, size_t count, size_t elem, ReduceFn fn, size_t begin, size_t end,
                                         absl::Time deadline) {
  auto* bytes = static_cast<std::byte*>(data);
  return Rounds(count, elem, [&](size_t offset, size_t c) {
    std::byte* chunk = bytes + offset * elem;
    // This rank's block within the round, relative to its chunk.
    const size_t lo = std::clamp(begin, offset, offset + c) - offset;
    const size_t hi = std::clamp(end, offset, offset + c) - offset;
    return Round([&] { std::memcpy(slot(rank_), chunk, c * elem); }, [&] { ReduceInto(chunk, lo, hi, elem, fn); },
                 [] {}, deadline);
  });
}

absl::Status ShmAllReduce::AllGather(void* data, size_t count, size_t elem, std::span<const int64_t> bounds,
                                     absl::Time deadline) {
  auto* bytes = static_cast<std::byte*>(data);
  return Rounds(count, elem, [&](size_t offset, size_t c) {
    std::byte* chunk = bytes + offset * elem;
    // Rank j's block within the round, relative to its chunk.
    auto block = [&](int j) {
      const size_t lo = std::clamp(static_cast<size_t>(bounds[j]), offset, offset + c) - offset;
      const size_t hi = std::clamp(static_cast<size_t>(bounds[j + 1]), offset, offset + c) - offset;
      return std::pair(lo * elem, (hi - lo) * elem);
    };
    return Round(
        [&] {
          const auto [at, n] = block(rank_);
          std::memcpy(slot(rank_) + at, chunk + at, n);
        },
        [&] {
          for (int j = 0; j < ranks_; ++j) {
            const auto [at, n] = block(j);
            if (j != rank_) std::memcpy(chunk + at, slot(j) + at, n);
          }
        },
        [] {}, deadline);
  });
}

void ShmAllReduce::ReduceInto(std::byte* out, size_t lo, size_t hi, size_t elem, ReduceFn fn) const {
  if (hi <= lo) return;
  // Every element is summed in rank order, whichever collective and rank sums it: a
  // reduce-scatter's block holds the bytes an all-reduce gives.
  const size_t at = lo * elem, n = hi - lo;
  fn(out + at, slot(0) + at, slot(1) + at, n);
  for (int j = 2; j < ranks_; ++j) fn(out + at, out + at, slot(j) + at, n);
}

template <class Publish, class Consume, class Finish>
absl::Status ShmAllReduce::Round(Publish publish, Consume consume, Finish finish, absl::Time deadline) {
  const uint32_t round = ++round_;
  publish();
  words(rank_)->arrived.store(round, std::memory_order_release);
  FutexWakeAll(&words(rank_)->arrived);
  if (absl::Status s = WaitAll(&RankWords::arrived, round, deadline, "arrive"); !s.ok()) return s;
  consume();
  words(rank_)->reduced.store(round, std::memory_order_release);
  FutexWakeAll(&words(rank_)->reduced);
  if (absl::Status s = WaitAll(&RankWords::reduced, round, deadline, "reduce"); !s.ok()) return s;
  finish();
  return absl::OkStatus();
}

absl::Status ShmAllReduce::WaitAll(std::atomic<uint32_t> RankWords::*counter, uint32_t round, absl::Time deadline,
                                   const char* phase) {
  for (int j = 0; j < ranks_; ++j) {
    std::atomic<uint32_t>* word = &(words(j)->*counter);
    for (int i = 0; i < kSpins && !Reached(word->load(std::memory_order_acquire), round); ++i) Pause();
    for (;;) {
      const uint32_t seen = word->load(std::memory_order_acquire);
      if (Reached(seen, round)) break;
      if (const uint32_t by = header()->aborted.load(std::memory_order_acquire); by != 0) return EndedBy(by);
      const absl::Time now = absl::Now();
      if (now >= deadline) {
        std::vector<int> late;
        for (int k = 0; k < ranks_; ++k) {
          if (!Reached((words(k)->*counter).load(std::memory_order_acquire), round)) late.push_back(k);
        }
        return absl::DeadlineExceededError(absl::StrCat("shared-memory all-reduce: rank(s) ", absl::StrJoin(late, ", "),
                                                        " did not ", phase, " in time (round ", round, ")"));
      }
      FutexWait(word, seen, std::min(kPoll, deadline - now));
    }
  }
  return absl::OkStatus();
}

void ShmAllReduce::Abort() { AbortAs(rank_); }

void ShmAllReduce::AbortAs(int rank) {
  // The first rank to give up is the one named.
  uint32_t none = 0;
  header()->aborted.compare_exchange_strong(none, static_cast<uint32_t>(rank) + 1, std::memory_order_acq_rel);
  for (int j = 0; j < ranks_; ++j) {
    FutexWakeAll(&words(j)->arrived);
    FutexWakeAll(&words(j)->reduced);
  }
}

}  // namespace gradsync::comm::internal
