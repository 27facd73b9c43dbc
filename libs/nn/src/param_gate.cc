#include "gradsync/nn/param_gate.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync::nn {

PassOrders::PassOrders(std::vector<ParamUnit> units, int back_first, int back_last) : units_(std::move(units)) {
  for (const ParamUnit& unit : units_) forward_.push_back(&unit);
  train_ = forward_;
  for (int i = back_last - 1; i >= back_first; --i) train_.push_back(&units_[i]);
}

absl::Status GatedPass::Next() {
  if (gate_ == nullptr) return absl::OkStatus();
  if (at_ >= order_->size()) {
    return absl::InternalError(absl::StrCat("the pass acquired more than its ", order_->size(), " units"));
  }
  const ParamUnit* unit = (*order_)[at_++];
  if (unit == held_) return absl::OkStatus();
  Finish();
  // The next unit that differs from this one (a unit kept over two steps is fetched once).
  size_t after = at_;
  while (after < order_->size() && (*order_)[after] == unit) ++after;
  const ParamUnit* next = after < order_->size() ? (*order_)[after] : nullptr;
  if (absl::Status s = gate_->Acquire(*unit, next); !s.ok()) return s;
  held_ = unit;
  return absl::OkStatus();
}

void GatedPass::Finish() {
  if (held_ != nullptr) gate_->Release(*held_);
  held_ = nullptr;
}

absl::Status GatedPass::Drain() {
  while (gate_ != nullptr && at_ < order_->size()) {
    if (absl::Status s = Next(); !s.ok()) return s;
  }
  Finish();
  return absl::OkStatus();
}

}  // namespace gradsync::nn
