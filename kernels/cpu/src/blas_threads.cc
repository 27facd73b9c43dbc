#include "gradsync/kernels/cpu/blas_threads.h"

// OpenBLAS's own entry point; weak so other BLAS libraries still link.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace gradsync::kernels::cpu {

bool SetBlasThreads(int threads) {
  if (openblas_set_num_threads == nullptr) return false;
  openblas_set_num_threads(threads);
  return true;
}

}  // namespace gradsync::kernels::cpu
