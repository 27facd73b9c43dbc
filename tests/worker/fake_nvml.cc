// A stand-in for the NVIDIA driver's libnvidia-ml.so.1, for hosts without the driver: the entry
// points GpuHealthReader opens, with the C ABI and error codes of NVML, answering for three GPUs:
//   GPU-00000000-0000-0000-0000-00000000000a  every quantity (an H100-like reading)
//   GPU-00000000-0000-0000-0000-00000000000b  no power sensor and no ECC (NOT_SUPPORTED)
//   GPU-00000000-0000-0000-0000-00000000000c  fallen off the bus (GPU_IS_LOST)
// and NOT_FOUND for any other UUID. On a GPU host the tests read the real library as well.
#include <cstring>

namespace {

constexpr unsigned int kSuccess = 0, kUninitialized = 1, kNotSupported = 3, kNotFound = 6, kGpuIsLost = 15;
int initialised = 0;
struct Gpu {
  const char* uuid;
  const char* name;
  bool full;
};
Gpu gpus[] = {{"GPU-00000000-0000-0000-0000-00000000000a", "NVIDIA H100 80GB HBM3", true},
              {"GPU-00000000-0000-0000-0000-00000000000b", "NVIDIA A10G", false}};

struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};

}  // namespace

extern "C" {

unsigned int nvmlInit_v2() {
  ++initialised;
  return kSuccess;
}
unsigned int nvmlShutdown() {
  if (initialised == 0) return kUninitialized;
  --initialised;
  return kSuccess;
}
const char* nvmlErrorString(unsigned int r) {
  switch (r) {
    case kSuccess: return "Success";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    case kGpuIsLost: return "GPU is lost";
    default: return "Unknown Error";
  }
}
unsigned int nvmlDeviceGetHandleByUUID(const char* uuid, Gpu** device) {
  if (initialised == 0) return kUninitialized;
  if (std::strcmp(uuid, "GPU-00000000-0000-0000-0000-00000000000c") == 0) return kGpuIsLost;
  for (Gpu& g : gpus) {
    if (std::strcmp(uuid, g.uuid) == 0) {
      *device = &g;
      return kSuccess;
    }
  }
  return kNotFound;
}
unsigned int nvmlDeviceGetName(Gpu* d, char* name, unsigned int length) {
  std::strncpy(name, d->name, length - 1);
  name[length - 1] = '\0';
  return kSuccess;
}
unsigned int nvmlDeviceGetUtilizationRates(Gpu* d, Utilization* u) {
  *u = d->full ? Utilization{87, 40} : Utilization{3, 1};
  return kSuccess;
}
unsigned int nvmlDeviceGetMemoryInfo(Gpu* d, Memory* m) {
  const unsigned long long gib = 1ull << 30;
  *m = d->full ? Memory{80 * gib, 68 * gib, 12 * gib} : Memory{24 * gib, 23 * gib, 1 * gib};
  return kSuccess;
}
unsigned int nvmlDeviceGetTemperature(Gpu* d, unsigned int sensor, unsigned int* t) {
  if (sensor != 0) return kNotSupported;
  *t = d->full ? 61 : 35;
  return kSuccess;
}
unsigned int nvmlDeviceGetPowerUsage(Gpu* d, unsigned int* milliwatts) {
  if (!d->full) return kNotSupported;
  *milliwatts = 312500;
  return kSuccess;
}
unsigned int nvmlDeviceGetTotalEccErrors(Gpu* d, unsigned int type, unsigned int counter, unsigned long long* n) {
  if (!d->full) return kNotSupported;
  if (counter != 0) return kNotSupported;  // only the volatile counts are read
  *n = type == 0 ? 4 : 0;
  return kSuccess;
}

}  // extern "C"
