// The health of the GPU a worker trains on, read from NVML at each scrape of its /metrics:
//   gradsync_gpu_up{gpu_uuid,gpu_model}                       1 when NVML read the GPU, 0 when not
//                                                             (a GPU that fell off the bus)
//   gradsync_gpu_utilization_ratio{...}                       busy fraction of the last sample period
//   gradsync_gpu_memory_used_bytes{...}, _memory_total_bytes  device memory, all processes
//   gradsync_gpu_temperature_celsius{...}
//   gradsync_gpu_power_watts{...}
//   gradsync_gpu_ecc_errors_total{...,type=corrected|uncorrected}   volatile counts (counter)
// A quantity the GPU does not report is left out, not written as zero. A CPU worker, or a host
// whose driver has no NVML, serves none of these.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gradsync/device/gpu_health.h"
#include "gradsync/v1/coordinator.pb.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace gradsync::worker {

class GpuMetrics final : public prometheus::Collectable {
 public:
  GpuMetrics(std::unique_ptr<device::GpuHealthReader> reader, std::vector<std::string> uuids)
      : reader_(std::move(reader)), uuids_(std::move(uuids)) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::unique_ptr<device::GpuHealthReader> reader_;
  std::vector<std::string> uuids_;
};

// The collectable for the GPU `device` names, reading NVML from `library`; null for a CPU device,
// a GPU without a UUID, or no NVML (logged once, as a warning: the worker trains on without it).
std::shared_ptr<prometheus::Collectable> GpuMetricsFor(const v1::Device& device, const std::string& library);

}  // namespace gradsync::worker
