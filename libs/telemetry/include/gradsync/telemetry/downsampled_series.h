// DownsampledSeries: a job's reduced steps in bounded memory, from the first step of the run to
// the newest, whatever the run's length.
//
// The points, oldest first, ordered by (generation, step):
//
//   first   the run's first step, as published; never merged;
//   old     buckets of `width` consecutive points merged into one (merged_steps = width), the
//           newest of them "open" while it holds fewer;
//   recent  the newest `recent` steps, as published.
//
// When the recent window is full its oldest step goes into the open bucket (or opens one). When
// the closed buckets outnumber their room, capacity - recent - 2, adjacent pairs merge and width
// doubles. So the old part covers the run at one resolution that halves each time the run
// doubles, and size() <= capacity always: 100k steps in 2000 points are the first step, about
// 780 buckets of 128 steps and the newest 500 steps. Cost: a step is O(1) amortized; a pair
// merge of all old buckets happens once every (capacity - recent) / 2 x width steps.
//
// Merging keeps sums and means exact (see MergePoints): the loss of a bucket is the mean of its
// steps' losses, so the mean over any run of whole points, weighted by merged_steps, is the mean
// of the steps they hold. A min/max envelope alone would hide where the loss was; LTTB keeps
// single steps, which on a noisy loss picks the spikes.
//
// Every point has an id, unique within the series and never reused, so that a store can mirror
// the series row by row: with `track_changes`, TakeChanges() returns the points made or changed
// and the ids removed since the last call (at most size() + capacity entries in all).
//
// Not thread-safe: the owner locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "gradsync/v1/telemetry.pb.h"

namespace gradsync::telemetry {

struct DownsampledSeriesOptions {
  // Points kept at most (at least 8).
  size_t capacity = 2000;
  // The newest steps kept as published (at most capacity - 4).
  size_t recent = 500;
  // Record what changed for TakeChanges().
  bool track_changes = false;
};

// `a` and `b` adjacent points of one series, `a` the older: one point standing for the steps of
// both (see the header comment of telemetry.proto's ReducedStep for each field).
v1::ReducedStep MergePoints(const v1::ReducedStep& a, const v1::ReducedStep& b);

class DownsampledSeries {
 public:
  struct Point {
    int64_t id = 0;
    v1::ReducedStep step;
  };
  struct Changes {
    std::vector<Point> upserted;  // made or changed, oldest first
    std::vector<int64_t> removed;
    bool empty() const { return upserted.empty() && removed.empty(); }
  };

  explicit DownsampledSeries(DownsampledSeriesOptions options);

  // The series `points` (any order, as a store returns them) were taken from, brought within
  // `options` when those are smaller than the series' were (its changes then say what merged).
  static DownsampledSeries FromPoints(DownsampledSeriesOptions options, std::vector<Point> points);

  // Adds one reduced step. In (generation, step) order it goes to the end; a step published late
  // goes where it belongs: among the recent steps, or into the old bucket that covers it.
  void Add(v1::ReducedStep step);

  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  // How many steps a closed old bucket holds (1 until the first pair merge).
  int64_t width() const { return width_; }
  // The newest point's (generation, step).
  std::optional<std::pair<int32_t, int64_t>> Newest() const;

  // The newest `limit` points (0: all), oldest first.
  void AppendTo(size_t limit, google::protobuf::RepeatedPtrField<v1::ReducedStep>* out) const;
  std::vector<Point> AllPoints() const;

  bool HasChanges() const { return !upserted_.empty() || !removed_.empty(); }
  // What changed since the last call; empty without track_changes.
  Changes TakeChanges();

 private:
  size_t recent_count() const { return points_.size() - 1 - old_count_; }
  // Index of the first recent point.
  size_t recent_begin() const { return 1 + old_count_; }
  bool IsOpen(const Point& bucket) const { return bucket.step.merged_steps() < width_; }
  // Old buckets but the open one.
  size_t closed_count() const;

  void InsertRecent(Point point);
  // Merges a step that belongs before the recent window into the old bucket that covers it.
  void AddToOld(Point point);
  // Moves recent steps beyond the window into the old buckets, then merges pairs while there are
  // too many.
  void Spill();
  void MergePairs();

  void Made(int64_t id);
  void Changed(int64_t id);
  void Removed(int64_t id);

  DownsampledSeriesOptions options_;
  size_t closed_room_;  // closed old buckets kept at most
  std::deque<Point> points_;
  size_t old_count_ = 0;  // old buckets, the open one included
  int64_t width_ = 1;
  int64_t next_id_ = 0;
  // Since the last TakeChanges: ids made (never handed out yet), ids made or changed, ids removed
  // that had been handed out.
  absl::flat_hash_set<int64_t> made_;
  absl::flat_hash_set<int64_t> upserted_;
  std::vector<int64_t> removed_;
};

}  // namespace gradsync::telemetry
