#include "gradsync/telemetry/downsampled_series.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <utility>

namespace gradsync::telemetry {
namespace {

std::pair<int32_t, int64_t> Key(const v1::ReducedStep& s) { return {s.generation(), s.step()}; }

bool KeyLess(const DownsampledSeries::Point& a, const DownsampledSeries::Point& b) { return Key(a.step) < Key(b.step); }

// A step as published stands for itself.
void AsPoint(v1::ReducedStep& s) {
  if (s.merged_steps() >= 1) return;
  s.set_merged_steps(1);
  s.set_first_step(s.step());
  s.set_min_loss(s.loss());
  s.set_max_loss(s.loss());
}

double WeightedMean(double a, int64_t na, double b, int64_t nb) {
  return (a * static_cast<double>(na) + b * static_cast<double>(nb)) / static_cast<double>(na + nb);
}

}  // namespace

v1::ReducedStep MergePoints(const v1::ReducedStep& older, const v1::ReducedStep& newer) {
  v1::ReducedStep a = older, b = newer;
  AsPoint(a);
  AsPoint(b);
  const int64_t na = a.merged_steps(), nb = b.merged_steps();
  auto mean = [&](double x, double y) { return WeightedMean(x, na, y, nb); };
  v1::ReducedStep m;
  m.set_job_id(b.job_id());
  m.set_generation(b.generation());
  m.set_step(b.step());
  m.set_epoch(b.epoch());
  m.set_world_size(b.world_size());
  m.set_slowest_rank(b.slowest_rank());
  m.set_merged_steps(na + nb);
  // A step published late may fall inside the newer point's range.
  m.set_first_step(a.generation() == b.generation() ? std::min(a.first_step(), b.first_step()) : a.first_step());
  m.set_partial(a.partial() || b.partial());
  m.set_loss(mean(a.loss(), b.loss()));
  m.set_min_loss(std::min(a.min_loss(), b.min_loss()));
  m.set_max_loss(std::max(a.max_loss(), b.max_loss()));
  m.set_samples(a.samples() + b.samples());
  m.set_tokens(a.tokens() + b.tokens());
  m.set_allreduce_bytes(a.allreduce_bytes() + b.allreduce_bytes());
  m.set_step_seconds(mean(a.step_seconds(), b.step_seconds()));
  const double seconds = m.step_seconds() * static_cast<double>(na + nb);
  m.set_tokens_per_second(seconds > 0 ? static_cast<double>(m.tokens()) / seconds : 0);
  m.set_mean_compute_seconds(mean(a.mean_compute_seconds(), b.mean_compute_seconds()));
  m.set_max_compute_seconds(std::max(a.max_compute_seconds(), b.max_compute_seconds()));
  m.set_mean_communication_seconds(mean(a.mean_communication_seconds(), b.mean_communication_seconds()));
  m.set_max_communication_seconds(std::max(a.max_communication_seconds(), b.max_communication_seconds()));
  m.set_mean_exposed_communication_seconds(
      mean(a.mean_exposed_communication_seconds(), b.mean_exposed_communication_seconds()));
  m.set_max_exposed_communication_seconds(
      std::max(a.max_exposed_communication_seconds(), b.max_exposed_communication_seconds()));
  m.set_grad_norm(mean(a.grad_norm(), b.grad_norm()));
  m.set_learning_rate(mean(a.learning_rate(), b.learning_rate()));
  // Each evaluation is already the exact mean over the validation set: the newest stands.
  if (b.has_validation_loss()) {
    m.set_validation_loss(b.validation_loss());
  } else if (a.has_validation_loss()) {
    m.set_validation_loss(a.validation_loss());
  }
  return m;
}

DownsampledSeries::DownsampledSeries(DownsampledSeriesOptions options) : options_(options) {
  options_.capacity = std::max<size_t>(options_.capacity, 8);
  options_.recent = std::min(options_.recent, options_.capacity - 4);
  // The first step and the open bucket take one place each.
  closed_room_ = options_.capacity - options_.recent - 2;
}

DownsampledSeries DownsampledSeries::FromPoints(DownsampledSeriesOptions options, std::vector<Point> points) {
  DownsampledSeries s(options);
  if (points.empty()) return s;
  std::sort(points.begin(), points.end(), KeyLess);
  int64_t max_id = 0;
  for (Point& p : points) {
    AsPoint(p.step);
    max_id = std::max(max_id, p.id);
  }
  s.next_id_ = max_id + 1;
  // The recent window: the trailing steps as published, never the first step.
  const size_t n = points.size();
  size_t recent = 0;
  while (recent < s.options_.recent && recent + 1 < n && points[n - 1 - recent].step.merged_steps() == 1) ++recent;
  s.old_count_ = n - 1 - recent;
  int64_t widest = 1;
  for (size_t i = 1; i <= s.old_count_; ++i) widest = std::max(widest, points[i].step.merged_steps());
  // Closed buckets hold a power of two, and more when a late step joined them.
  s.width_ = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(widest)));
  s.points_.assign(std::make_move_iterator(points.begin()), std::make_move_iterator(points.end()));
  s.Spill();
  return s;
}

std::optional<std::pair<int32_t, int64_t>> DownsampledSeries::Newest() const {
  if (points_.empty()) return std::nullopt;
  return Key(points_.back().step);
}

void DownsampledSeries::Add(v1::ReducedStep step) {
  AsPoint(step);
  Point point{next_id_++, std::move(step)};
  if (old_count_ > 0 && !(Key(points_[old_count_].step) < Key(point.step))) {
    AddToOld(std::move(point));
  } else {
    InsertRecent(std::move(point));
  }
  Spill();
}

void DownsampledSeries::InsertRecent(Point point) {
  // With no old bucket yet every point is a step as published, the first one included.
  const auto begin = points_.begin() + static_cast<std::ptrdiff_t>(old_count_ == 0 ? 0 : recent_begin());
  const auto at = std::upper_bound(begin, points_.end(), point, KeyLess);
  Made(point.id);
  points_.insert(at, std::move(point));
}

void DownsampledSeries::AddToOld(Point point) {
  Made(point.id);
  if (KeyLess(point, points_.front())) {
    // Older than the first step: it becomes the first, and the former first joins the oldest
    // bucket.
    Point former = std::exchange(points_.front(), std::move(point));
    points_[1].step = MergePoints(former.step, points_[1].step);
    Changed(points_[1].id);
    Removed(former.id);
    return;
  }
  const auto begin = points_.begin() + 1, end = points_.begin() + 1 + static_cast<std::ptrdiff_t>(old_count_);
  const auto bucket = std::lower_bound(begin, end, point, KeyLess);  // exists: point <= the last bucket
  bucket->step = MergePoints(point.step, bucket->step);
  Changed(bucket->id);
  Removed(point.id);
}

void DownsampledSeries::Spill() {
  while (!points_.empty() && recent_count() > options_.recent) {
    const auto oldest = points_.begin() + static_cast<std::ptrdiff_t>(recent_begin());
    if (old_count_ > 0 && IsOpen(points_[old_count_])) {
      Point& open = points_[old_count_];
      open.step = MergePoints(open.step, oldest->step);
      Changed(open.id);
      Removed(oldest->id);
      points_.erase(oldest);
    } else {
      ++old_count_;  // the step opens a bucket of its own
    }
    if (closed_count() > closed_room_) MergePairs();
  }
  // Only after FromPoints with a smaller capacity can there still be too many.
  while (closed_count() > closed_room_) MergePairs();
}

size_t DownsampledSeries::closed_count() const {
  if (old_count_ == 0) return 0;
  return old_count_ - (IsOpen(points_[old_count_]) ? 1 : 0);
}

void DownsampledSeries::MergePairs() {
  const size_t closed = closed_count();
  const bool has_open = closed < old_count_;
  std::vector<Point> old;
  auto merge = [&](Point& a, Point& b) {
    a.step = MergePoints(a.step, b.step);
    Changed(a.id);
    Removed(b.id);
    old.push_back(std::move(a));
  };
  for (size_t i = 1; i + 1 <= closed; i += 2) merge(points_[i], points_[i + 1]);
  if (closed % 2 == 1) {
    // The odd bucket out, with the open one when there is one: fewer than the new width, so open.
    if (has_open) {
      merge(points_[closed], points_[old_count_]);
    } else {
      old.push_back(std::move(points_[closed]));
    }
  } else if (has_open) {
    old.push_back(std::move(points_[old_count_]));
  }
  width_ *= 2;
  const auto old_end = points_.begin() + 1 + static_cast<std::ptrdiff_t>(old_count_);
  points_.erase(points_.begin() + 1, old_end);
  points_.insert(points_.begin() + 1, std::make_move_iterator(old.begin()), std::make_move_iterator(old.end()));
  old_count_ = old.size();
}

void DownsampledSeries::AppendTo(size_t limit, google::protobuf::RepeatedPtrField<v1::ReducedStep>* out) const {
  const size_t n = limit == 0 ? points_.size() : std::min(limit, points_.size());
  for (auto it = points_.end() - static_cast<std::ptrdiff_t>(n); it != points_.end(); ++it) *out->Add() = it->step;
}

std::vector<DownsampledSeries::Point> DownsampledSeries::AllPoints() const {
  return std::vector<Point>(points_.begin(), points_.end());
}

void DownsampledSeries::Made(int64_t id) {
  if (!options_.track_changes) return;
  made_.insert(id);
  upserted_.insert(id);
}

void DownsampledSeries::Changed(int64_t id) {
  if (options_.track_changes) upserted_.insert(id);
}

void DownsampledSeries::Removed(int64_t id) {
  if (!options_.track_changes) return;
  upserted_.erase(id);
  // A point made and removed between two calls was never handed out: nothing to remove.
  if (made_.erase(id) == 0) removed_.push_back(id);
}

DownsampledSeries::Changes DownsampledSeries::TakeChanges() {
  Changes changes;
  if (!upserted_.empty()) {
    for (const Point& p : points_) {
      if (upserted_.contains(p.id)) changes.upserted.push_back(p);
    }
  }
  changes.removed = std::move(removed_);
  removed_.clear();
  made_.clear();
  upserted_.clear();
  return changes;
}

}  // namespace gradsync::telemetry
