#include "gradsync/comm/communicator.h"

namespace gradsync::comm {

std::pair<int64_t, int64_t> BlockRange(int64_t count, int ranks, int rank) {
  const int64_t base = count / ranks;
  const int64_t extra = count % ranks;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

}  // namespace gradsync::comm
