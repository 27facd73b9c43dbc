// The NCCL backend and GPU memory over Gloo. Built only with CUDA (GRADSYNC_HAVE_CUDA).
//
// NCCL: float collectives take device memory on the communicator's GPU. Every collective runs
// on a dedicated communication stream, ordered after the work already queued on the compute
// stream by an event, so a gradient bucket is reduced only once backward has produced it while
// backward goes on. Waiting polls the collective's completion event and ncclCommGetAsyncError;
// a collective older than the timeout, or Abort() (the coordinator ended the generation), aborts
// the communicator with ncclCommAbort, which also unblocks the peers' kernels. The communicator
// is non-blocking (ncclConfig_t.blocking = 0), so neither its creation nor a collective can hang
// the caller past the timeout. The double all-reduce takes host memory: it carries the trainer's
// few scalars (loss, token count), staged through a device buffer.
//
// Costs with n ranks and B bytes are NCCL's (ring): all-reduce 2(n-1)/n x B per rank, all-gather
// and reduce-scatter (n-1)/n x B, broadcast B. Blocks of uneven sizes (ReduceScatter with a count
// not divisible by n, ReduceScatterBlocks) are one ncclReduce per block to its owner, and
// AllGatherBlocks one ncclBroadcast per block from its owner, each set grouped into one launch
// (ncclGroupStart/End): about B sent per rank for either.
//
// Staged: a communicator over device memory that copies each buffer to pinned host memory, runs
// a host communicator's collective (Gloo), and copies the result back. Several ranks can then
// share one GPU, which NCCL refuses. Its block collectives run the host communicator's (shared
// memory or Gloo TCP) and copy only what they need: the whole buffer in and this rank's block out
// for a reduce-scatter, this rank's block in and the whole buffer out for an all-gather.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gradsync/comm/communicator.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::comm {

struct NcclOptions {
  // CUDA device ordinal of this rank.
  int device = 0;
  // The stream whose queued work must finish before a collective reads its buffer; 0 is the
  // legacy default stream.
  cudaStream_t compute_stream = nullptr;
  // Bound on forming the communicator and on every collective; past it the communicator aborts.
  absl::Duration timeout = absl::Minutes(5);
};

// Forms an NCCL communicator of `size` ranks: rank 0 creates the unique id and publishes it in
// `kv` (the coordinator's store, namespaced per generation); every rank then joins. UNAVAILABLE
// with NCCL's message on failure, DEADLINE_EXCEEDED if peers do not join within the timeout.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectNccl(KvClient* kv, int rank, int size, const NcclOptions& options);

// A communicator over device memory on `device` that runs `host`'s collectives (which must
// outlive it) on pinned host copies. Operations, the host-memory ones included, run one at a time
// on the wrapper's own thread in issue order. A collective's copies run on a staging stream after
// the work queued on `stream` when it was issued (an event), so later kernels on `stream` keep
// running; Wait() returns once the result is back in device memory. Must be created and given
// collectives on a thread whose current device is `device`.
std::unique_ptr<Communicator> StageThroughHost(Communicator* host, int device, cudaStream_t stream);

}  // namespace gradsync::comm
