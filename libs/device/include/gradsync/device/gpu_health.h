// A GPU's health as its driver reports it, through NVML (the NVIDIA Management Library that
// nvidia-smi and DCGM read). NVML ships with the driver, not the CUDA toolkit, so it is opened at
// run time (dlopen of libnvidia-ml.so.1): a build without CUDA reads it as well, and a host without
// the driver simply has none. A GPU is named by its UUID ("GPU-xxxxxxxx-..."), never by an
// ordinal: CUDA numbers GPUs fastest first and relative to CUDA_VISIBLE_DEVICES, NVML by PCI bus.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync::device {

// One reading. A quantity the GPU does not report (no ECC on a consumer card, no power sensor in a
// virtual GPU) is left empty rather than zero.
struct GpuHealth {
  std::string uuid;
  std::string name;
  // Fraction of the last sample period (1/6 s to 1 s, by product) in which a kernel ran.
  std::optional<double> utilization;
  std::optional<double> memory_used_bytes;
  std::optional<double> memory_total_bytes;
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
  // Volatile counts: since the driver last loaded.
  std::optional<double> ecc_corrected_errors;
  std::optional<double> ecc_uncorrected_errors;
};

class GpuHealthReader {
 public:
  static constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

  // Opens NVML from `library` and initialises it. UNAVAILABLE naming the library and the reason
  // when it is absent (no driver), lacks an entry point, or its initialisation fails.
  static absl::StatusOr<std::unique_ptr<GpuHealthReader>> Open(const std::string& library = kDefaultLibrary);
  ~GpuHealthReader();
  GpuHealthReader(const GpuHealthReader&) = delete;
  GpuHealthReader& operator=(const GpuHealthReader&) = delete;

  // The GPU with this UUID now. NOT_FOUND when NVML does not know it, UNAVAILABLE for another
  // NVML error (a GPU that fell off the bus says so). Thread-safe, as NVML is.
  absl::StatusOr<GpuHealth> Read(const std::string& uuid) const;

 private:
  struct Api;
  GpuHealthReader(void* handle, std::unique_ptr<Api> api);

  void* handle_;
  std::unique_ptr<Api> api_;
};

}  // namespace gradsync::device
