#include "gradsync/kernels/cpu/encoder.h"

#include "clones.h"

namespace gradsync::kernels::cpu {

template <typename T>
GRADSYNC_CLONES void EncoderForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t batch,
                                    int64_t seq_len, int64_t channels) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      const int64_t row = b * seq_len + t;
      T* o = out + row * channels;
      const T* e = wte + static_cast<int64_t>(tokens[row]) * channels;
      if (wpe == nullptr) {
        for (int64_t c = 0; c < channels; ++c) o[c] = e[c];
        continue;
      }
      const T* p = wpe + t * channels;
      for (int64_t c = 0; c < channels; ++c) o[c] = e[c] + p[c];
    }
  }
}

template <typename T>
GRADSYNC_CLONES void EncoderBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t batch,
                                     int64_t seq_len, int64_t channels) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      const int64_t row = b * seq_len + t;
      const T* d = dout + row * channels;
      T* de = dwte + static_cast<int64_t>(tokens[row]) * channels;
      for (int64_t c = 0; c < channels; ++c) de[c] += d[c];
      if (dwpe == nullptr) continue;
      T* dp = dwpe + t * channels;
      for (int64_t c = 0; c < channels; ++c) dp[c] += d[c];
    }
  }
}

template void EncoderForward<float>(float*, const int32_t*, const float*, const float*, int64_t, int64_t, int64_t);
template void EncoderForward<double>(double*, const int32_t*, const double*, const double*, int64_t, int64_t, int64_t);
template void EncoderBackward<float>(float*, float*, const float*, const int32_t*, int64_t, int64_t, int64_t);
template void EncoderBackward<double>(double*, double*, const double*, const int32_t*, int64_t, int64_t, int64_t);

}  // namespace gradsync::kernels::cpu
