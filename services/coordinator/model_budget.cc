#include "model_budget.h"

#include <algorithm>
#include <variant>

#include "absl/strings/str_format.h"
#include "gradsync/nn/model.h"
#include "job_runtime.h"

namespace gradsync::coordinator {
namespace {

double GiB(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30); }

// The teacher's [H, D] and [C, H] fp64 weights (libs/data's synthetic_teacher.h).
int64_t TeacherBytes(const data::DataPlan& data) {
  const auto* s = std::get_if<data::SyntheticPlan>(&data.source);
  if (s == nullptr) return 0;
  return static_cast<int64_t>(sizeof(double)) * s->teacher_hidden * (s->input_dim + s->num_classes);
}

// How the state is divided, for the messages: nothing unsharded.
std::string Sharded(const ModelFootprint& f) {
  if (f.sharding == spec::Sharding::kNone) return "";
  return absl::StrFormat(" (a rank's share, ddp.sharding \"%s\" over %d ranks)", spec::Name(f.sharding), f.world_size);
}

}  // namespace

ModelFootprint FootprintOf(const spec::JobPlan& plan, int world_size) {
  ModelFootprint f;
  f.params = plan.model.NumParams();
  f.world_size = world_size;
  f.sharding = plan.sharding;
  f.field = plan.model.SizeField();
  // Validation bounds every width (65536) and the layers, so these products fit in int64.
  f.model_bytes = ddp::RankStateBytes(plan.sharding, f.params, nn::LargestUnitNumel(plan.model), world_size).total();
  f.teacher_bytes = TeacherBytes(plan.data);
  return f;
}

absl::Status CheckModelBudget(const ModelFootprint& f, int64_t max_bytes) {
  if (f.model_bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the model's %d parameters take %.1f GiB with their gradients and AdamW's two moments%s, over the %.1f "
        "GiB a worker gives one job's model (coordinator flag --max_model_bytes)",
        f.field, f.params, GiB(f.model_bytes), Sharded(f), GiB(max_bytes)));
  }
  if (f.model_bytes + f.teacher_bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data.synthetic.teacherHidden: the synthetic task's teacher network takes %.1f GiB, which with the model's "
        "%.1f GiB%s is over the %.1f GiB a worker gives one job's model (coordinator flag --max_model_bytes)",
        GiB(f.teacher_bytes), GiB(f.model_bytes), Sharded(f), GiB(max_bytes)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<spec::JobPlan>> PlanWithinBudget(const v1::JobSpec& spec, int64_t max_bytes) {
  // A script's model is its own, built where the coordinator cannot count it.
  if (spec.has_script()) return std::nullopt;
  absl::StatusOr<spec::JobPlan> plan = spec::PlanJob(spec);
  if (!plan.ok()) return plan.status();
  if (absl::Status s = CheckModelBudget(FootprintOf(*plan, std::max(MinWorkers(spec), 1)), max_bytes); !s.ok()) {
    return s;
  }
  return std::optional<spec::JobPlan>(*std::move(plan));
}

}  // namespace gradsync::coordinator
