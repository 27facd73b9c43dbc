// What the coordinator's unit tests do as a worker would: register, and report a checkpoint part
// written to real files.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "coordinator.h"
#include "gradsync/v1/coordinator.pb.h"

namespace gradsync::coordinator {

inline std::string RegisterTestWorker(Coordinator& c, const std::string& host) {
  v1::RegisterWorkerRequest req;
  req.set_hostname(host);
  req.mutable_device()->set_kind(v1::Device::CPU);
  return c.RegisterWorker(req).worker_id();
}

// The worker's next assignment, which must be there already (the test fails otherwise).
v1::Assignment TakeTestAssignment(Coordinator& c, const std::string& worker);

// Writes the part of `a`'s rank at `step` (a 4-float model whose last value is the step) under
// the assignment's checkpoint root and reports it.
absl::StatusOr<v1::ReportCheckpointResponse> ReportTestCheckpoint(Coordinator& c, const std::string& worker,
                                                                  const v1::Assignment& a, int64_t step);

}  // namespace gradsync::coordinator
