// The CUDA runtime calls that kernels/cuda's launchers and tests/kernels_cuda's tests make, on the
// host, for the emulated kernel library (linked instead of libcudart): one device of compute
// capability 9.0 whose memory is host memory.
//
// cudaMalloc maps each buffer so that it ends (up to 255 bytes of rounding) at an inaccessible
// page, and fills it with 0xFF bytes (NaN in float and bf16): a kernel that reads or writes past
// its buffer faults, one that reads memory nobody wrote sees NaN, where a GPU would often go on
// quietly. Every call completes before it returns, so streams and events only need to exist.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "warp_emulation.h"

namespace {

constexpr size_t kPage = 4096;
// What an H100 allows a block with the opt-in (cudaDevAttrMaxSharedMemoryPerBlockOptin).
constexpr int kMaxSharedOptIn = 232448;

struct Mapping {
  void* base;
  size_t bytes;
};

std::mutex mu;
std::map<const void*, Mapping> allocations;  // by the pointer cudaMalloc returned

cudaError_t Record(cudaError_t err) {
  if (err != cudaSuccess) gradsync::emulation::pending_error = err;
  return err;
}

struct ErrorName {
  cudaError_t code;
  const char* name;
  const char* text;
};
constexpr ErrorName kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
};

const ErrorName* Find(cudaError_t err) {
  for (const ErrorName& e : kErrors) {
    if (e.code == err) return &e;
  }
  return nullptr;
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return Record(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (size == 0) return cudaSuccess;
  const size_t rounded = (size + 255) / 256 * 256;  // cudaMalloc's alignment
  const size_t data = (rounded + kPage - 1) / kPage * kPage;
  void* base = mmap(nullptr, data + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return Record(cudaErrorMemoryAllocation);
  unsigned char* guard = static_cast<unsigned char*>(base) + data;
  mprotect(guard, kPage, PROT_NONE);
  unsigned char* user = guard - rounded;
  std::memset(user, 0xFF, rounded);
  std::lock_guard<std::mutex> lock(mu);
  allocations[user] = {base, data + kPage};
  *ptr = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(mu);
  const auto it = allocations.find(ptr);
  if (it == allocations.end()) return Record(cudaErrorInvalidDevicePointer);
  munmap(it->second.base, it->second.bytes);
  allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind /*kind*/) {
  if (count > 0 && (dst == nullptr || src == nullptr)) return Record(cudaErrorInvalidValue);
  if (count > 0) std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t /*stream*/) {
  return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  if (count > 0 && ptr == nullptr) return Record(cudaErrorInvalidValue);
  if (count > 0) std::memset(ptr, value, count);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count, cudaStream_t /*stream*/) {
  return cudaMemset(ptr, value, count);
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : Record(cudaErrorInvalidDevice); }

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return Record(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
    case cudaDevAttrMultiProcessorCount: *value = 132; return cudaSuccess;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = kMaxSharedOptIn; return cudaSuccess;
    default: return Record(cudaErrorNotSupported);  // an attribute the emulation has not been taught
  }
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (func == nullptr) return Record(cudaErrorInvalidDeviceFunction);
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return Record(cudaErrorNotSupported);
  if (value < 0 || value > kMaxSharedOptIn) return Record(cudaErrorInvalidValue);
  gradsync::emulation::SetSharedMemoryLimit(func, static_cast<size_t>(value));
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  const cudaError_t err = gradsync::emulation::pending_error;
  gradsync::emulation::pending_error = cudaSuccess;
  return err;
}

cudaError_t cudaPeekAtLastError() { return gradsync::emulation::pending_error; }

const char* cudaGetErrorName(cudaError_t err) {
  const ErrorName* e = Find(err);
  return e != nullptr ? e->name : "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t err) {
  const ErrorName* e = Find(err);
  return e != nullptr ? e->text : "an error the emulation does not name";
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = reinterpret_cast<cudaStream_t>(new char);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned /*flags*/) { return cudaStreamCreate(stream); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<char*>(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t /*stream*/) { return cudaSuccess; }

cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = reinterpret_cast<cudaEvent_t>(new char);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<char*>(event);
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t /*event*/, cudaStream_t /*stream*/) { return cudaSuccess; }

cudaError_t cudaEventSynchronize(cudaEvent_t /*event*/) { return cudaSuccess; }

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t /*start*/, cudaEvent_t /*end*/) {
  *ms = 0.0f;
  return cudaSuccess;
}

// cuda_check.cc names cuBLASLt's statuses; the emulated GEMM engine never returns one.
const char* cublasLtGetStatusName(cublasStatus_t /*status*/) { return "CUBLAS_STATUS_NOT_SUPPORTED"; }
const char* cublasLtGetStatusString(cublasStatus_t /*status*/) { return "cuBLASLt is not part of the emulation"; }

}  // extern "C"
