// The hyperparameters of one AdamW step over one parameter range, shared by
// kernels/cpu/adamw.h and kernels/cuda/adamw.cuh (the math is in those headers).
#pragma once

#include <cstdint>

namespace gradsync::kernels {

struct AdamWHyper {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;
  int64_t step = 1;   // t, counting from 1
  bool decay = true;  // apply weight_decay to this range (false for biases and norm gains)
};

}  // namespace gradsync::kernels
