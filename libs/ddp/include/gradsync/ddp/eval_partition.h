// How the ranks share the windows of a validation set so that its mean loss is exact and does not
// depend on the world size beyond the order of a sum of doubles.
//
// The windows 0 .. W-1 form batches of `batch` consecutive windows, batch k holding windows
// [k*batch, min((k+1)*batch, W)): N = ceil(W / batch) batches, the same ones for every world
// size. Rank r of R takes the contiguous batches [floor(r*N/R), floor((r+1)*N/R)), so
//   - every window lies in exactly one batch and every batch in exactly one rank's range (the
//     ranges tile 0 .. N-1 because floor(r*N/R) is non-decreasing in r and reaches N at r = R);
//   - the ranks' shares differ by at most one batch;
//   - a batch holds the same windows whatever R is, so the model computes the same loss sum for
//     it (a forward pass is deterministic on the CPU): only how the ranks add the batches' sums
//     and the all-reduce adds the ranks' sums changes with R.
// A rank whose range is empty (R > N) still joins the all-reduce with zeros.
#pragma once

#include <cstdint>

namespace gradsync::ddp {

// One rank's windows: [first, end), in batches of `batch` starting at `first` (the last may be
// short). first == end when the rank has none.
struct EvalShard {
  int64_t first = 0;
  int64_t end = 0;
  int64_t batch = 1;

  int64_t windows() const { return end - first; }
};

// Rank `rank`'s share of `windows` windows among `world` ranks in batches of `batch`; requires
// windows >= 0, batch >= 1 and 0 <= rank < world.
EvalShard EvalShardFor(int64_t windows, int64_t batch, int world, int rank);

// The most batches any rank's EvalShardFor holds: ceil(N / world) of the N batches. A model whose
// parameters live sharded gathers them in every batch, so each rank evaluates this many, padding
// with empty batches.
int64_t MostBatchesPerRank(int64_t windows, int64_t batch, int world);

}  // namespace gradsync::ddp
