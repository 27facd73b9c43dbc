#include "gradsync/data/dataset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "synthetic_teacher.h"

namespace gradsync::data {
namespace {

// Field names as users write them (the proto's JSON names), like the spec library's errors.
absl::Status CheckAtLeast(const char* field, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("data.synthetic.", field, ": must be at least ", min, ", got ", value));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Dataset>> CreateDataset(const gradsync::v1::JobSpec& spec) {
  if (!spec.data().has_synthetic()) return absl::InvalidArgumentError("data: no source set");
  const gradsync::v1::SyntheticData& s = spec.data().synthetic();
  for (absl::Status status :
       {CheckAtLeast("numSamples", s.num_samples(), 1), CheckAtLeast("inputDim", s.input_dim(), 1),
        CheckAtLeast("numClasses", s.num_classes(), 2),
        CheckAtLeast("teacherHidden", s.teacher_hidden(), 1)}) {
    if (!status.ok()) return status;
  }
  SyntheticTeacherConfig config;
  config.num_samples = s.num_samples();
  config.input_dim = s.input_dim();
  config.num_classes = s.num_classes();
  config.teacher_hidden = s.teacher_hidden();
  config.seed = s.seed();
  return std::make_unique<SyntheticTeacherDataset>(config);
}

}  // namespace gradsync::data
