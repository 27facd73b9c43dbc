// The smoothed loss a progress line shows beside one step's: an exponential moving average over
// every step, bias-corrected as Adam corrects its moments, so that the first value is the first
// loss rather than a fraction of it, and every later one is a weighted mean of the losses so far.
#pragma once

#include <cmath>

namespace gradsync::train {

class LossSmoother {
 public:
  // `decay`: the weight the average so far keeps at each step (0.9: about the last 10 steps).
  explicit LossSmoother(double decay = 0.9) : decay_(decay) {}

  void Add(double loss) {
    average_ = decay_ * average_ + (1 - decay_) * loss;
    kept_ *= decay_;
  }
  // 0 before the first Add.
  double value() const { return kept_ == 1 ? 0 : average_ / (1 - kept_); }

 private:
  double decay_;
  double average_ = 0;
  double kept_ = 1;  // decay^steps: the share of the (zero) start still in average_
};

}  // namespace gradsync::train
