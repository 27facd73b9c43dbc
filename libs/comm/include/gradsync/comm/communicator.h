// Collective communication among the ranks of one generation.
//
// Collectives are asynchronous: each call queues the operation and returns a Work handle at
// once; the backend runs operations in the order they were issued (the same order on every rank,
// which is the caller's duty), and Wait() returns the operation's status. Buffers must stay
// valid and untouched until the Work completes. Float buffers live where the backend computes
// (host memory for Gloo, the rank's GPU for NCCL); the double all-reduce always takes host
// memory (the trainer's few scalars).
//
// Costs with n ranks and a buffer of B bytes (ring algorithms, as Gloo runs them):
//   AllReduce      2(n-1) steps, 2(n-1)/n x B sent per rank (reduce-scatter + all-gather);
//                  through shared memory (ranks on one host): 2 synchronisations per round of
//                  at most the slot size, B copied in, B/n x n read and B/n written reducing,
//                  B copied out, per rank, with no data through the kernel
//   ReduceScatter  as AllReduce (an all-reduce that keeps this rank's block: Gloo's own
//                  reduce-scatter is wrong for uneven blocks); the optimum is (n-1)/n x B
//   AllGather      n-1 steps, (n-1)/n x B sent per rank (B = the gathered size)
//   ReduceScatterBlocks  through shared memory: B copied in, B/n x n read, no result copied
//                  out; over TCP, as AllReduce (its order of additions is Gloo's ring's)
//   AllGatherBlocks  n-1 steps, (n-1)/n x B sent per rank (Gloo's allgatherv); through shared
//                  memory, B/n copied in and (n-1)/n x B copied out per rank. On NCCL one
//                  grouped launch of a broadcast (reduce) per block, about B sent per rank; a
//                  backend without its own runs one broadcast per block, and ReduceScatterBlocks
//                  as an AllReduce
//   Broadcast      B from the root to each other rank
//   Barrier        a round of empty messages
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::comm {

enum class ReduceOp { kSum, kAverage };

// The wire format of a float all-reduce: fp32, or bf16 (half the bytes; each hop adds in fp32 and
// rounds to bf16, so the result carries about 3 significant digits).
enum class WireType { kFloat32, kBFloat16 };

// A pending collective.
class Work {
 public:
  // When the backend began and finished running the collective (zero until then). A device
  // backend (NCCL) times the collective on its stream: `finished` is when the host saw it done and
  // `started` is `finished` less the collective's time on the device, which leaves out the wait
  // for the compute it was queued behind.
  struct Timing {
    absl::Time started;
    absl::Time finished;
  };

  virtual ~Work() = default;
  virtual Timing timing() const = 0;
  // The collective's status once done; DEADLINE_EXCEEDED if not done within `timeout` (the
  // collective keeps running and may be waited on again).
  virtual absl::Status Wait(absl::Duration timeout = absl::InfiniteDuration()) = 0;
  virtual bool Done() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Collectives issued so far; heartbeats carry it so a stalled rank can be named.
  virtual int64_t sequence() const = 0;
  // Collectives finished so far, successfully or not. sequence() - completed() are in flight; the
  // oldest of them is number completed() (numbers start at 0).
  virtual int64_t completed() const = 0;
  // Human-readable backend name, e.g. "gloo".
  virtual std::string backend() const = 0;

  // In place; every rank ends with identical bytes.
  virtual std::shared_ptr<Work> AllReduce(std::span<float> data, ReduceOp op, WireType wire = WireType::kFloat32) = 0;
  virtual std::shared_ptr<Work> AllReduce(std::span<double> data, ReduceOp op) = 0;
  // Copies `root`'s data to every rank.
  virtual std::shared_ptr<Work> Broadcast(std::span<float> data, int root) = 0;
  // `out` (size() x in.size() elements) receives every rank's `in`, in rank order.
  virtual std::shared_ptr<Work> AllGather(std::span<const float> in, std::span<float> out) = 0;
  // Sums `in` across ranks and leaves this rank's block in `out`. Blocks split in.size() as
  // evenly as possible, the first in.size() % size() ranks taking one element more; `out` must
  // have exactly this rank's block size (see BlockRange).
  virtual std::shared_ptr<Work> ReduceScatter(std::span<const float> in, std::span<float> out) = 0;
  // Blocks of a flat buffer of any sizes (sharded data parallel): `bounds` holds size() + 1
  // non-decreasing offsets from 0 to data.size(), the same on every rank; rank r's block is
  // elements [bounds[r], bounds[r + 1]), possibly empty. `bounds` is copied.
  //
  // Sums `data` across ranks in place into this rank's block; the rest of `data` is unspecified
  // afterwards. On Gloo the block holds the very bytes AllReduce would give it (the same order of
  // additions), so sharded training matches unsharded bit for bit.
  virtual std::shared_ptr<Work> ReduceScatterBlocks(std::span<float> data, std::span<const int64_t> bounds);
  // In place: each rank's block of `data` is its input, and every rank ends with all of them.
  virtual std::shared_ptr<Work> AllGatherBlocks(std::span<float> data, std::span<const int64_t> bounds);
  virtual std::shared_ptr<Work> Barrier() = 0;

  // Fails the collective in flight (a peer may be dead and never answer) and every later one with
  // ABORTED, so a generation the coordinator ended stops at once instead of after the timeout.
  // Thread-safe; may be called from any thread, any number of times.
  virtual void Abort() = 0;

  // Blocking conveniences: issue and wait.
  absl::Status AllReduceSum(std::span<float> data) { return AllReduce(data, ReduceOp::kSum)->Wait(); }
  absl::Status AllReduceSum(std::span<double> data) { return AllReduce(data, ReduceOp::kSum)->Wait(); }
};

// The [begin, end) element range of `rank`'s block when `count` elements are split over `ranks`.
std::pair<int64_t, int64_t> BlockRange(int64_t count, int ranks, int rank);
// The ranks + 1 bounds of BlockRange's blocks, for the *Blocks collectives.
std::vector<int64_t> EvenBounds(int64_t count, int ranks);
// OK when `bounds` are valid blocks of `count` elements over `ranks` (see ReduceScatterBlocks);
// INVALID_ARGUMENT naming `what` otherwise.
absl::Status CheckBounds(std::span<const int64_t> bounds, int64_t count, int ranks, const char* what);
// A Work already finished with `status`.
std::shared_ptr<Work> CompletedWork(absl::Status status);

struct GlooOptions {
  // Address this rank's TCP endpoints bind to and advertise (a host name or IP).
  std::string hostname = "127.0.0.1";
  // Bound on rendezvous and on every collective; past it the collective fails.
  absl::Duration timeout = absl::Minutes(5);
  // All-reduce (and reduce-scatter, built on it) through one shared-memory segment when every
  // rank can map it, i.e. all ranks share a host; TCP otherwise, or when false. Each rank's slot
  // is shared_memory_slot_bytes; larger buffers go through it in rounds.
  bool shared_memory = true;
  size_t shared_memory_slot_bytes = size_t{4} << 20;
};

// Forms a Gloo full-mesh context of `size` ranks through `kv` (rank 0..size-1 must all call it).
// UNAVAILABLE (with Gloo's message) if a peer cannot be reached or rendezvous times out. Here and
// in every collective, a Gloo error about one peer names its rank and address, e.g. "allreduce #7
// on rank 0 of 3 failed: rank 2 (10.0.0.4:41234) closed the connection: <Gloo's message>".
// The process must ignore SIGPIPE (the services do, in InstallShutdownHandlers): Gloo writes to
// its sockets without MSG_NOSIGNAL, and a write to a dead peer's socket would end the process.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(KvClient* kv, int rank, int size, const GlooOptions& options);

}  // namespace gradsync::comm
