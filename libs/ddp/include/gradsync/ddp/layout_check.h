// At rendezvous, every rank compares its model and bucket layout with rank 0's, so a job whose
// ranks built different models fails at once with the first differing parameter named, instead
// of all-reducing mismatched buffers.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gradsync/comm/kv_client.h"

namespace gradsync::ddp {

// Publishes `description` (one line per parameter) under this rank; rank 0 compares every rank's
// with its own and publishes a verdict every rank returns. FAILED_PRECONDITION "model layout of
// rank R differs from rank 0 at parameter N: rank 0 has X, rank R has Y" on every rank when any
// differs.
absl::Status CheckLayoutAcrossRanks(comm::KvClient* kv, int rank, int world_size, const std::string& description,
                                    absl::Duration timeout);

// The first line where two descriptions differ (-1 when equal), with both lines.
int FirstDifference(const std::string& a, const std::string& b, std::string* line_a, std::string* line_b);

}  // namespace gradsync::ddp
