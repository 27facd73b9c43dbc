// How many threads the CPU BLAS may use inside one call.
#pragma once

namespace gradsync::kernels::cpu {

// Sets the BLAS thread count when the BLAS in use is OpenBLAS (a no-op for other BLAS
// libraries). Workers use 1: several ranks share a machine's cores, and a fixed count keeps
// sgemm's summation order, and so the results, identical from run to run.
// Returns false when the BLAS offers no such control.
bool SetBlasThreads(int threads);

}  // namespace gradsync::kernels::cpu
