#include "gradsync/kernels/cpu/residual.h"

#include "clones.h"

namespace gradsync::kernels::cpu {

template <typename T>
GRADSYNC_CLONES void ResidualForward(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template void ResidualForward<float>(float*, const float*, const float*, int64_t);
template void ResidualForward<double>(double*, const double*, const double*, int64_t);

}  // namespace gradsync::kernels::cpu
