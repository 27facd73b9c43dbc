#include "gpu_metrics.h"

#include <optional>

#include "gradsync/core/log.h"

namespace gradsync::worker {
namespace {

using Labels = std::vector<prometheus::ClientMetric::Label>;

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type) {
  return {name, help, type, {}};
}

void Add(prometheus::MetricFamily& family, const Labels& labels, const std::optional<double>& value) {
  if (!value.has_value()) return;
  prometheus::ClientMetric m;
  m.label = labels;
  if (family.type == prometheus::MetricType::Counter) {
    m.counter.value = *value;
  } else {
    m.gauge.value = *value;
  }
  family.metric.push_back(std::move(m));
}

}  // namespace

std::vector<prometheus::MetricFamily> GpuMetrics::Collect() const {
  using prometheus::MetricType;
  auto up = Family("gradsync_gpu_up", "1 when NVML read the GPU, 0 when it could not.", MetricType::Gauge);
  auto util =
      Family("gradsync_gpu_utilization_ratio", "Fraction of the last sample period a kernel ran.", MetricType::Gauge);
  auto used = Family("gradsync_gpu_memory_used_bytes", "Device memory in use, by every process.", MetricType::Gauge);
  auto total = Family("gradsync_gpu_memory_total_bytes", "Device memory in all.", MetricType::Gauge);
  auto temp = Family("gradsync_gpu_temperature_celsius", "GPU core temperature.", MetricType::Gauge);
  auto power = Family("gradsync_gpu_power_watts", "Power draw of the board.", MetricType::Gauge);
  auto ecc = Family("gradsync_gpu_ecc_errors_total", "ECC memory errors since the driver loaded, by type.",
                    MetricType::Counter);
  for (const std::string& uuid : uuids_) {
    absl::StatusOr<device::GpuHealth> h = reader_->Read(uuid);
    if (!h.ok()) {
      Add(up, {{"gpu_uuid", uuid}, {"gpu_model", ""}}, 0.0);
      continue;
    }
    const Labels labels = {{"gpu_uuid", uuid}, {"gpu_model", h->name}};
    Add(up, labels, 1.0);
    Add(util, labels, h->utilization);
    Add(used, labels, h->memory_used_bytes);
    Add(total, labels, h->memory_total_bytes);
    Add(temp, labels, h->temperature_celsius);
    Add(power, labels, h->power_watts);
    Labels corrected = labels, uncorrected = labels;
    corrected.push_back({"type", "corrected"});
    uncorrected.push_back({"type", "uncorrected"});
    Add(ecc, corrected, h->ecc_corrected_errors);
    Add(ecc, uncorrected, h->ecc_uncorrected_errors);
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* f : {&up, &util, &used, &total, &temp, &power, &ecc}) {
    if (!f->metric.empty()) out.push_back(std::move(*f));
  }
  return out;
}

std::shared_ptr<prometheus::Collectable> GpuMetricsFor(const v1::Device& device, const std::string& library) {
  if (device.kind() != v1::Device::CUDA || device.gpu_uuid().empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<device::GpuHealthReader>> reader = device::GpuHealthReader::Open(library);
  if (!reader.ok()) {
    GS_LOG(WARNING) << "no GPU health metrics: " << reader.status().message();
    return nullptr;
  }
  return std::make_shared<GpuMetrics>(*std::move(reader), std::vector<std::string>{device.gpu_uuid()});
}

}  // namespace gradsync::worker
