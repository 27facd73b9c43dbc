// All-reduce (and reduce-scatter, all-gather) among ranks that share a host, through one
// shared-memory segment.
//
// Every rank owns a slot of S bytes; a result buffer of S bytes follows. A buffer larger than S
// goes in rounds of at most S bytes. One round, with n ranks and c elements:
//   1. copy the chunk into my slot; publish arrived[me] = round;
//   2. wait until every rank has arrived;
//   3. reduce my block of the chunk (BlockRange(c, n, me)) over the n slots in rank order into
//      the result; publish reduced[me] = round;
//   4. wait until every rank has reduced; copy the whole result back into the chunk.
// Cost per rank: c elements written to the slot, c read back, c/n x n read and c/n written by
// the reduction: memory traffic only, no system call but a futex wake per phase, against
// 2(n-1)/n x B through the kernel's TCP stack for Gloo's ring. Every block is summed by one rank
// in rank order, so every rank ends with identical bytes, and the same bytes run to run.
//
// Reuse needs no further barrier: a rank writes its slot in round r+1 only after step 4 of round
// r, when every reader of that slot is done; and it writes the result in round r+1 only after
// step 2, when every rank has arrived at round r+1, so has copied round r's result out.
//
// A waiter spins briefly, then sleeps on the counter's futex (the segment is shared, so the
// futex is too), waking every few milliseconds to check the deadline and the segment's abort
// word. Any rank's Abort() sets that word, and so does a rank whose collective failed (a peer
// missed the deadline): a rank that gave up must not leave its peers reading a slot it may
// write again. The collective in flight on every rank then ends ABORTED, naming the rank, within
// a few milliseconds, and so does every later one: the group is finished.
// Private to libs/comm.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "shm_segment.h"

namespace gradsync::comm::internal {

class ShmAllReduce {
 public:
  // out[i] = a[i] + b[i] for n elements (out may be a); the reduction Gloo takes too.
  using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

  // Segment size for `ranks` slots of `slot_bytes` (a multiple of 64).
  static size_t SegmentBytes(int ranks, size_t slot_bytes);
  // Writes the header of a fresh (zeroed) segment; rank 0 does this before the others attach.
  static void Format(const ShmSegment& segment, int ranks, size_t slot_bytes, uint64_t token);
  // FAILED_PRECONDITION if the segment's header is not the one `token` names.
  static absl::StatusOr<std::unique_ptr<ShmAllReduce>> Attach(ShmSegment segment, int rank, int ranks,
                                                              size_t slot_bytes, uint64_t token);

  // In place over `count` elements of `elem` bytes. DEADLINE_EXCEEDED naming the ranks that did
  // not arrive; ABORTED after any rank's Abort(). Only one thread calls these at a time.
  absl::Status Run(void* data, size_t count, size_t elem, ReduceFn fn, absl::Time deadline);
  // Reduce-scatter in place: elements [begin, end) of `data` end as the sums, bitwise what Run
  // gives them (every element is summed in rank order); the rest of `data` is left as it was.
  // Per round every rank copies its chunk in and reduces only its block: c written, c/n x n read.
  absl::Status ReduceScatter(void* data, size_t count, size_t elem, ReduceFn fn, size_t begin, size_t end,
                             absl::Time deadline);
  // All-gather in place: rank j's elements [bounds[j], bounds[j + 1]) of `data` are its input,
  // and every rank ends with all of them. Per round each rank copies its block in and the others'
  // out: about c written and c read per rank.
  absl::Status AllGather(void* data, size_t count, size_t elem, std::span<const int64_t> bounds, absl::Time deadline);

  // Ends the collective in flight on every rank of the segment, and all later ones.
  void Abort();
  // `rank` gave up: as Abort(), recording who.
  void AbortAs(int rank);

  ShmSegment& segment() { return segment_; }

 private:
  struct Header;
  struct RankWords;

  ShmAllReduce(ShmSegment segment, int rank, int ranks, size_t slot_bytes);
  // Runs round(offset, count) for each chunk of at most a slot, aborting the group on failure.
  template <class RoundFn>
  absl::Status Rounds(size_t count, size_t elem, RoundFn round);
  // One round: publish() writes this rank's slot, every rank arrives, consume() reads the slots,
  // every rank has consumed, finish() (which may read the result).
  template <class Publish, class Consume, class Finish>
  absl::Status Round(Publish publish, Consume consume, Finish finish, absl::Time deadline);
  // Sums elements [lo, hi) of the chunk over every slot, in rank order, into out.
  void ReduceInto(std::byte* out, size_t lo, size_t hi, size_t elem, ReduceFn fn) const;
  // Waits until every rank's counter (arrived or reduced) reaches `round`.
  absl::Status WaitAll(std::atomic<uint32_t> RankWords::*counter, uint32_t round, absl::Time deadline,
                       const char* phase);

  Header* header() const;
  RankWords* words(int rank) const;
  std::byte* slot(int rank) const;
  std::byte* result() const;

  ShmSegment segment_;
  int rank_, ranks_;
  size_t slot_bytes_;
  uint32_t round_ = 0;
};

}  // namespace gradsync::comm::internal
