// DevicePages over CUDA's virtual memory management; see gradsync/kernels/cuda/device_pages.h.
#include "gradsync/kernels/cuda/device_pages.h"

#include <cuda.h>

#include <algorithm>
#include <type_traits>

#include "absl/base/call_once.h"
#include "absl/strings/str_cat.h"
#include "gradsync/kernels/cuda/cuda_check.h"

namespace gradsync::kernels::cuda {
namespace {

// The driver functions DevicePages calls, looked up once through the runtime.
struct Driver {
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuMemAddressReserve) reserve = nullptr;
  decltype(&::cuMemAddressFree) free_address = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) attribute = nullptr;
  absl::Status status;
};

template <typename Fn>
absl::Status Lookup(const char* symbol, Fn* fn) {
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  // The ABI these declarations have had since CUDA 10.2; 12000 is the oldest version asked by.
  const cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &ptr, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t err = cudaGetDriverEntryPoint(symbol, &ptr, cudaEnableDefault, &found);
#endif
  if (err != cudaSuccess) return CudaStatus(err, absl::StrCat("looking up the driver's ", symbol));
  if (found != cudaDriverEntryPointSuccess || ptr == nullptr) {
    return absl::InternalError(absl::StrCat("the CUDA driver has no ", symbol, " (virtual memory management)"));
  }
  *fn = reinterpret_cast<Fn>(ptr);
  return absl::OkStatus();
}

const Driver& TheDriver() {
  static absl::once_flag once;
  static Driver driver;
  absl::call_once(once, [] {
    absl::Status& s = driver.status;
    if (s.ok()) s = Lookup("cuMemGetAllocationGranularity", &driver.granularity);
    if (s.ok()) s = Lookup("cuMemAddressReserve", &driver.reserve);
    if (s.ok()) s = Lookup("cuMemAddressFree", &driver.free_address);
    if (s.ok()) s = Lookup("cuMemCreate", &driver.create);
    if (s.ok()) s = Lookup("cuMemRelease", &driver.release);
    if (s.ok()) s = Lookup("cuMemMap", &driver.map);
    if (s.ok()) s = Lookup("cuMemUnmap", &driver.unmap);
    if (s.ok()) s = Lookup("cuMemSetAccess", &driver.set_access);
    if (s.ok()) s = Lookup("cuGetErrorName", &driver.error_name);
    if (s.ok()) s = Lookup("cuDeviceGet", &driver.device_get);
    if (s.ok()) s = Lookup("cuDeviceGetAttribute", &driver.attribute);
  });
  return driver;
}

// OK for CUDA_SUCCESS; INTERNAL "<what>: <error name>" otherwise.
absl::Status DriverStatus(CUresult r, absl::string_view what) {
  if (r == CUDA_SUCCESS) return absl::OkStatus();
  const char* name = nullptr;
  if (TheDriver().error_name == nullptr || TheDriver().error_name(r, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "unknown CUresult";
  }
  return absl::InternalError(absl::StrCat(what, ": ", name, " (", static_cast<int>(r), ")"));
}

CUmemAllocationProp DeviceProp(int device) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

CUdeviceptr Address(const float* p) { return reinterpret_cast<CUdeviceptr>(p); }

// Whether `device` takes CUDA's virtual memory management (not every virtualised GPU does).
bool VmmSupported(int device) {
  const Driver& d = TheDriver();
  if (!d.status.ok()) return false;
  CUdevice dev = 0;
  int supported = 0;
  return d.device_get(&dev, device) == CUDA_SUCCESS &&
         d.attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) == CUDA_SUCCESS &&
         supported != 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DevicePages>> DevicePages::Create(int device, int64_t count, cudaStream_t stream,
                                                                 bool mapped) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("DevicePages of ", count, " elements"));
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  // The runtime makes the device's primary context current, which the driver calls act in.
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaFree(nullptr), "initialising the device's context"));
  std::unique_ptr<DevicePages> pages(new DevicePages(device, count, stream));
  if (!VmmSupported(device)) {
    GRADSYNC_CUDA_RETURN_IF_ERROR(pages->AllocatePlain());
    return pages;
  }
  GRADSYNC_CUDA_RETURN_IF_ERROR(pages->Reserve());
  if (mapped) GRADSYNC_CUDA_RETURN_IF_ERROR(pages->Commit(0, count));
  return pages;
}

absl::Status DevicePages::Reserve() {
  const Driver& d = TheDriver();
  const CUmemAllocationProp prop = DeviceProp(device_);
  size_t granularity = 0;
  GRADSYNC_CUDA_RETURN_IF_ERROR(DriverStatus(d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                                             "cuMemGetAllocationGranularity"));
  const auto g = static_cast<int64_t>(std::max<size_t>(granularity, sizeof(float)));
  const int64_t bytes = std::max<int64_t>(count_ * static_cast<int64_t>(sizeof(float)), 1);
  const int64_t per_chunk = (bytes + kMaxChunks * g - 1) / (kMaxChunks * g);  // granules a chunk
  chunk_bytes_ = g * std::max<int64_t>(per_chunk, 1);
  const int64_t chunks = (bytes + chunk_bytes_ - 1) / chunk_bytes_;
  reserved_bytes_ = chunks * chunk_bytes_;
  CUdeviceptr base = 0;
  GRADSYNC_CUDA_RETURN_IF_ERROR(DriverStatus(d.reserve(&base, static_cast<size_t>(reserved_bytes_), 0, 0, 0),
                                             absl::StrCat("cuMemAddressReserve of ", reserved_bytes_, " bytes")));
  base_ = reinterpret_cast<float*>(base);
  handles_.assign(static_cast<size_t>(chunks), 0);
  return absl::OkStatus();
}

absl::Status DevicePages::AllocatePlain() {
  vmm_ = false;
  chunk_bytes_ = std::max<int64_t>(count_ * static_cast<int64_t>(sizeof(float)), sizeof(float));
  void* ptr = nullptr;
  GRADSYNC_CUDA_RETURN_IF_ERROR(CudaStatus(cudaMalloc(&ptr, static_cast<size_t>(chunk_bytes_)),
                                           absl::StrCat("cudaMalloc of ", chunk_bytes_, " bytes")));
  base_ = static_cast<float*>(ptr);
  handles_.assign(1, 1);  // one chunk, always there
  mapped_chunks_ = peak_chunks_ = 1;
  return Zero(0, count_);
}

DevicePages::~DevicePages() {
  if (base_ == nullptr) return;
  cudaSetDevice(device_);
  // Work queued on the array must be over before its memory goes.
  cudaStreamSynchronize(stream_);
  if (!vmm_) {
    cudaFree(base_);
    return;
  }
  for (int64_t c = 0; c < static_cast<int64_t>(handles_.size()); ++c) {
    if (handles_[c] != 0) (void)Unmap(c);
  }
  (void)TheDriver().free_address(Address(base_), static_cast<size_t>(reserved_bytes_));
}

absl::Status DevicePages::Map(int64_t chunk) {
  const Driver& d = TheDriver();
  const CUmemAllocationProp prop = DeviceProp(device_);
  const CUdeviceptr at = Address(base_) + static_cast<CUdeviceptr>(chunk * chunk_bytes_);
  const auto size = static_cast<size_t>(chunk_bytes_);
  CUmemGenericAllocationHandle handle = 0;
  GRADSYNC_CUDA_RETURN_IF_ERROR(DriverStatus(d.create(&handle, size, &prop, 0),
                                             absl::StrCat("cuMemCreate of ", chunk_bytes_, " bytes of device memory")));
  absl::Status status = DriverStatus(d.map(at, size, 0, handle, 0), "cuMemMap");
  if (status.ok()) {
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    status = DriverStatus(d.set_access(at, size, &access, 1), "cuMemSetAccess");
    if (!status.ok()) (void)d.unmap(at, size);
  }
  if (!status.ok()) {
    (void)d.release(handle);
    return status;
  }
  handles_[chunk] = handle;
  peak_chunks_ = std::max(peak_chunks_, ++mapped_chunks_);
  return absl::OkStatus();
}

absl::Status DevicePages::Unmap(int64_t chunk) {
  const Driver& d = TheDriver();
  const CUdeviceptr at = Address(base_) + static_cast<CUdeviceptr>(chunk * chunk_bytes_);
  GRADSYNC_CUDA_RETURN_IF_ERROR(DriverStatus(d.unmap(at, static_cast<size_t>(chunk_bytes_)), "cuMemUnmap"));
  const CUmemGenericAllocationHandle handle = handles_[chunk];
  handles_[chunk] = 0;
  --mapped_chunks_;
  return DriverStatus(d.release(handle), "cuMemRelease");
}

absl::Status DevicePages::Zero(int64_t begin, int64_t end) {
  begin = std::clamp<int64_t>(begin, 0, count_);
  end = std::clamp<int64_t>(end, begin, count_);
  const int64_t per = chunk_elements();
  while (begin < end) {
    int64_t to = std::min(end, (begin / per + 1) * per);
    if (handles_[begin / per] == 0) {
      begin = to;
      continue;
    }
    while (to < end && handles_[to / per] != 0) to = std::min(end, to + per);  // the run of mapped chunks
    GRADSYNC_CUDA_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(base_ + begin, 0, static_cast<size_t>(to - begin) * sizeof(float), stream_),
                   "cudaMemsetAsync zeroing device pages"));
    begin = to;
  }
  return absl::OkStatus();
}

absl::Status DevicePages::Commit(int64_t begin, int64_t end) {
  if (!vmm_) return absl::OkStatus();
  begin = std::clamp<int64_t>(begin, 0, count_);
  end = std::clamp<int64_t>(end, begin, count_);
  if (begin == end) return absl::OkStatus();
  const int64_t per = chunk_elements();
  for (int64_t c = begin / per; c <= (end - 1) / per; ++c) {
    if (handles_[c] != 0) continue;
    GRADSYNC_CUDA_RETURN_IF_ERROR(Map(c));
    GRADSYNC_CUDA_RETURN_IF_ERROR(Zero(c * per, std::min(count_, (c + 1) * per)));
  }
  return absl::OkStatus();
}

absl::Status DevicePages::Release(int64_t begin, int64_t end) {
  if (!vmm_) return Zero(begin, end);
  begin = std::clamp<int64_t>(begin, 0, count_);
  end = std::clamp<int64_t>(end, begin, count_);
  if (begin == end) return absl::OkStatus();
  const int64_t per = chunk_elements();
  // Whole chunks: those starting at or after begin and ending at or before end; the array's last
  // chunk counts as ending at count_.
  const int64_t first = (begin + per - 1) / per;
  const int64_t last = end == count_ ? static_cast<int64_t>(handles_.size()) : end / per;  // exclusive
  if (first >= last) return Zero(begin, end);
  GRADSYNC_CUDA_RETURN_IF_ERROR(Zero(begin, std::min(end, first * per)));
  GRADSYNC_CUDA_RETURN_IF_ERROR(Zero(std::max(begin, last * per), end));
  for (int64_t c = first; c < last; ++c) {
    if (handles_[c] != 0) GRADSYNC_CUDA_RETURN_IF_ERROR(Unmap(c));
  }
  return absl::OkStatus();
}

}  // namespace gradsync::kernels::cuda
