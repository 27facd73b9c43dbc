// Turning CUDA runtime and cuBLAS(Lt) result codes into absl::Status, once, at the boundary.
//
// Every launcher in gradsync/kernels/cuda checks its shapes first (INVALID_ARGUMENT naming the
// argument), then launches and returns LaunchStatus("KernelName"): a failed launch (bad
// configuration, too much shared memory) is reported against the kernel that caused it. Errors of
// the kernel's execution are asynchronous and surface at the next synchronising call, which the
// caller checks with CudaStatus.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gradsync::kernels::cuda {

// OK for cudaSuccess; otherwise INTERNAL "<what>: <error name>: <error text>".
absl::Status CudaStatus(cudaError_t err, absl::string_view what);

// OK for CUBLAS_STATUS_SUCCESS; otherwise INTERNAL "<what>: <status name>".
absl::Status CublasStatus(cublasStatus_t status, absl::string_view what);

// The launch error of the kernel launched last on this thread (cudaGetLastError, which also clears
// it), as INTERNAL "launch of <kernel> failed: ...".
absl::Status LaunchStatus(absl::string_view kernel);

}  // namespace gradsync::kernels::cuda

// Returns from the enclosing function when the expression (an absl::Status) is not OK. Variadic
// so that template arguments with commas need no extra parentheses.
#define GRADSYNC_CUDA_RETURN_IF_ERROR(...)               \
  do {                                                   \
    ::absl::Status gradsync_status_ = (__VA_ARGS__);     \
    if (!gradsync_status_.ok()) return gradsync_status_; \
  } while (false)
