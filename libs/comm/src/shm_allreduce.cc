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

absl::Status ShmAllReduce::Run(void* data, size_t count, size_t elem, ReduceFn fn, absl::Time deadline) {
  // Once the group has ended, this rank's slot may still be read by a peer finishing a round:
  // write nothing more.
  if (const uint32_t by = header()->aborted.load(std::memory_order_acquire); by != 0) return EndedBy(by);
  auto* bytes = static_cast<std::byte*>(data);
  const size_t per_round = slot_bytes_ / elem;
  for (size_t offset = 0; offset < count; offset += per_round) {
    const size_t c = std::min(per_round, count - offset);
    if (absl::Status s = Round(bytes + offset * elem, c, elem, fn, deadline); !s.ok()) {
      AbortAs(rank_);  // the others may still read this rank's slot: no rank goes on alone
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ShmAllReduce::Round(std::byte* chunk, size_t count, size_t elem, ReduceFn fn, absl::Time deadline) {
  const uint32_t round = ++round_;
  std::memcpy(slot(rank_), chunk, count * elem);
  words(rank_)->arrived.store(round, std::memory_order_release);
  FutexWakeAll(&words(rank_)->arrived);
  if (absl::Status s = WaitAll(&RankWords::arrived, round, deadline, "arrive"); !s.ok()) return s;

  const auto [lo, hi] = BlockRange(static_cast<int64_t>(count), ranks_, rank_);
  if (hi > lo) {
    const size_t at = static_cast<size_t>(lo) * elem, n = static_cast<size_t>(hi - lo);
    std::byte* out = result() + at;
    fn(out, slot(0) + at, slot(1) + at, n);
    for (int j = 2; j < ranks_; ++j) fn(out, out, slot(j) + at, n);
  }
  words(rank_)->reduced.store(round, std::memory_order_release);
  FutexWakeAll(&words(rank_)->reduced);
  if (absl::Status s = WaitAll(&RankWords::reduced, round, deadline, "reduce"); !s.ok()) return s;
  std::memcpy(chunk, result(), count * elem);
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
