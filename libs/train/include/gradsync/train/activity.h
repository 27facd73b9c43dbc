// What a rank is doing right now, in words, from its collective counters: the heartbeat carries it
// so that the coordinator can say which rank holds a stalled job up and in which bucket.
#pragma once

#include <cstdint>
#include <string>

namespace gradsync::train {

// Where the training loop is: the step being computed and where its collectives start.
struct StepMarker {
  // The optimizer step in progress, counted from 1; 0 before the first.
  int64_t step = 0;
  // Sequence number of the step's first collective (its first gradient bucket).
  int64_t first_collective = -1;
  // Gradient buckets all-reduced per step; the step's loss all-reduce follows them.
  int buckets = 0;
};

// `issued` collectives were started and `done` finished (Communicator::sequence / completed).
std::string DescribeActivity(const StepMarker& at, int64_t issued, int64_t done);

}  // namespace gradsync::train
