#include "coordinator_test_util.h"

#include "gradsync/ckpt/checkpoint.h"
#include "gtest/gtest.h"

namespace gradsync::coordinator {

v1::Assignment TakeTestAssignment(Coordinator& c, const std::string& worker) {
  auto a = c.NextAssignment(worker, absl::ZeroDuration());
  EXPECT_TRUE(a.ok() && a->has_value()) << "no assignment for " << worker;
  return a.ok() && a->has_value() ? **a : v1::Assignment();
}

absl::StatusOr<v1::ReportCheckpointResponse> ReportTestCheckpoint(Coordinator& c, const std::string& worker,
                                                                  const v1::Assignment& a, int64_t step) {
  ckpt::RankState s;
  s.layout.Add("w", {4}, true);
  s.params = {1, 2, 3, static_cast<float>(step)};
  s.step = step;
  s.cursor = step * 10;
  s.rank = a.rank();
  s.world_size = a.world_size();
  const std::string dir = ckpt::CheckpointDir(a.checkpoint_root(), step);
  auto part = ckpt::WriteRankPart(dir, s);
  if (!part.ok()) return part.status();
  v1::ReportCheckpointRequest r;
  r.set_worker_id(worker);
  r.set_job_id(a.job_id());
  r.set_generation(a.generation());
  r.set_rank(a.rank());
  r.set_step(step);
  r.set_cursor(step * 10);
  r.set_dir(dir);
  *r.mutable_part() = *part;
  return c.ReportCheckpoint(r);
}

}  // namespace gradsync::coordinator
