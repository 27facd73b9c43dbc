#include "gradsync/ddp/eval_partition.h"

#include <algorithm>

namespace gradsync::ddp {

EvalShard EvalShardFor(int64_t windows, int64_t batch, int world, int rank) {
  const int64_t batches = (windows + batch - 1) / batch;
  const int64_t first_batch = batches * rank / world;
  const int64_t end_batch = batches * (rank + 1) / world;
  return EvalShard{std::min(windows, first_batch * batch), std::min(windows, end_batch * batch), batch};
}

int64_t MostBatchesPerRank(int64_t windows, int64_t batch, int world) {
  const int64_t batches = (windows + batch - 1) / batch;
  return (batches + world - 1) / world;
}

}  // namespace gradsync::ddp
