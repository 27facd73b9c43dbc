// Test support: the libraries' factories fed from a spec, as a worker feeds them (the spec planned
// by libs/spec's job_plan.h, then built), so that a test states its case as the spec a user writes.
// The planning errors and the factories' own come back alike.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "gradsync/data/dataset.h"
#include "gradsync/data/validation_set.h"
#include "gradsync/nn/model.h"
#include "gradsync/spec/job_plan.h"
#include "gradsync/v1/job.pb.h"

namespace gradsync::testing {

inline absl::StatusOr<std::unique_ptr<nn::Model>> ModelOf(const v1::JobSpec& spec,
                                                          nn::ModelInit init = nn::ModelInit::kFromSeed) {
  absl::StatusOr<nn::ModelPlan> plan = spec::PlanModel(spec);
  if (!plan.ok()) return plan.status();
  return nn::CreateModel(*plan, init);
}

inline absl::StatusOr<std::unique_ptr<data::Dataset>> DatasetOf(const v1::JobSpec& spec) {
  absl::StatusOr<data::DataPlan> plan = spec::PlanData(spec);
  if (!plan.ok()) return plan.status();
  return data::CreateDataset(*plan);
}

inline absl::StatusOr<std::unique_ptr<data::ValidationSet>> ValidationSetOf(const v1::JobSpec& spec) {
  absl::StatusOr<data::DataPlan> plan = spec::PlanData(spec);
  if (!plan.ok()) return plan.status();
  return data::CreateValidationSet(*plan);
}

}  // namespace gradsync::testing
