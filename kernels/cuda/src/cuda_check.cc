#include "gradsync/kernels/cuda/cuda_check.h"

#include "absl/strings/str_cat.h"

namespace gradsync::kernels::cuda {

absl::Status CudaStatus(cudaError_t err, absl::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
}

absl::Status CublasStatus(cublasStatus_t status, absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cublasLtGetStatusName(status), " (", cublasLtGetStatusString(status), ")"));
}

absl::Status LaunchStatus(absl::string_view kernel) {
  return CudaStatus(cudaGetLastError(), absl::StrCat("launch of ", kernel, " failed"));
}

}  // namespace gradsync::kernels::cuda
