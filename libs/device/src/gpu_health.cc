#include "gradsync/device/gpu_health.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace gradsync::device {
namespace {

// The few NVML declarations read here, as nvml.h has them (the header ships with the driver's
// development files, which a build machine need not have). The ABI of these entry points has been
// stable since NVML's v2 initialisation.
using NvmlReturn = unsigned int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlNotFound = 6;
constexpr unsigned int kTemperatureGpu = 0;          // NVML_TEMPERATURE_GPU
constexpr unsigned int kMemoryErrorCorrected = 0;    // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr unsigned int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr unsigned int kVolatileEcc = 0;             // NVML_VOLATILE_ECC
constexpr unsigned int kNameBufferSize = 96;         // NVML_DEVICE_NAME_V2_BUFFER_SIZE
struct NvmlDevice;
struct NvmlUtilization {
  unsigned int gpu;     // percent
  unsigned int memory;  // percent of time memory was read or written
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

template <typename F>
bool Bind(void* handle, const char* name, F*& f) {
  f = reinterpret_cast<F*>(dlsym(handle, name));
  return f != nullptr;
}

}  // namespace

struct GpuHealthReader::Api {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice**) = nullptr;
  NvmlReturn (*name)(NvmlDevice*, char*, unsigned int) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice*, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice*, NvmlMemory*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice*, unsigned int, unsigned int*) = nullptr;
  NvmlReturn (*power)(NvmlDevice*, unsigned int*) = nullptr;
  NvmlReturn (*ecc)(NvmlDevice*, unsigned int, unsigned int, unsigned long long*) = nullptr;

  // The symbol that is missing, or null when all are there.
  const char* BindAll(void* h) {
    if (!Bind(h, "nvmlInit_v2", init)) return "nvmlInit_v2";
    if (!Bind(h, "nvmlShutdown", shutdown)) return "nvmlShutdown";
    if (!Bind(h, "nvmlErrorString", error_string)) return "nvmlErrorString";
    if (!Bind(h, "nvmlDeviceGetHandleByUUID", by_uuid)) return "nvmlDeviceGetHandleByUUID";
    if (!Bind(h, "nvmlDeviceGetName", name)) return "nvmlDeviceGetName";
    if (!Bind(h, "nvmlDeviceGetUtilizationRates", utilization)) return "nvmlDeviceGetUtilizationRates";
    if (!Bind(h, "nvmlDeviceGetMemoryInfo", memory)) return "nvmlDeviceGetMemoryInfo";
    if (!Bind(h, "nvmlDeviceGetTemperature", temperature)) return "nvmlDeviceGetTemperature";
    if (!Bind(h, "nvmlDeviceGetPowerUsage", power)) return "nvmlDeviceGetPowerUsage";
    if (!Bind(h, "nvmlDeviceGetTotalEccErrors", ecc)) return "nvmlDeviceGetTotalEccErrors";
    return nullptr;
  }
  std::string Error(NvmlReturn r) const {
    const char* text = error_string(r);
    return absl::StrCat(text != nullptr ? text : "unknown error", " (NVML ", r, ")");
  }
};

absl::StatusOr<std::unique_ptr<GpuHealthReader>> GpuHealthReader::Open(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat("NVML (", library,
                                               ") cannot be loaded: ", why != nullptr ? why : "unknown reason",
                                               "; GPU health comes with the NVIDIA driver"));
  }
  auto api = std::make_unique<Api>();
  if (const char* missing = api->BindAll(handle)) {
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat("NVML (", library, ") has no ", missing));
  }
  if (const NvmlReturn r = api->init(); r != kNvmlSuccess) {
    const std::string why = api->Error(r);
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat("NVML (", library, ") did not initialise: ", why));
  }
  return std::unique_ptr<GpuHealthReader>(new GpuHealthReader(handle, std::move(api)));
}

GpuHealthReader::GpuHealthReader(void* handle, std::unique_ptr<Api> api) : handle_(handle), api_(std::move(api)) {}

GpuHealthReader::~GpuHealthReader() {
  api_->shutdown();
  dlclose(handle_);
}

absl::StatusOr<GpuHealth> GpuHealthReader::Read(const std::string& uuid) const {
  NvmlDevice* device = nullptr;
  if (const NvmlReturn r = api_->by_uuid(uuid.c_str(), &device); r != kNvmlSuccess) {
    const std::string message = absl::StrCat("NVML has no GPU ", uuid, ": ", api_->Error(r));
    return r == kNvmlNotFound ? absl::NotFoundError(message) : absl::UnavailableError(message);
  }
  GpuHealth h;
  h.uuid = uuid;
  char name[kNameBufferSize] = {};
  if (api_->name(device, name, sizeof(name)) == kNvmlSuccess) h.name = name;
  if (NvmlUtilization u{}; api_->utilization(device, &u) == kNvmlSuccess) h.utilization = u.gpu / 100.0;
  if (NvmlMemory m{}; api_->memory(device, &m) == kNvmlSuccess) {
    h.memory_used_bytes = static_cast<double>(m.used);
    h.memory_total_bytes = static_cast<double>(m.total);
  }
  if (unsigned int t = 0; api_->temperature(device, kTemperatureGpu, &t) == kNvmlSuccess) h.temperature_celsius = t;
  if (unsigned int mw = 0; api_->power(device, &mw) == kNvmlSuccess) h.power_watts = mw / 1000.0;
  if (unsigned long long n = 0; api_->ecc(device, kMemoryErrorCorrected, kVolatileEcc, &n) == kNvmlSuccess) {
    h.ecc_corrected_errors = static_cast<double>(n);
  }
  if (unsigned long long n = 0; api_->ecc(device, kMemoryErrorUncorrected, kVolatileEcc, &n) == kNvmlSuccess) {
    h.ecc_uncorrected_errors = static_cast<double>(n);
  }
  return h;
}

}  // namespace gradsync::device
