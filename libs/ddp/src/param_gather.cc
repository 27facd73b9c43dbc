#include "gradsync/ddp/param_gather.h"

#include <algorithm>
#include <utility>

namespace gradsync::ddp {

ParamGather::ParamGather(nn::Model* model, comm::Communicator* comm, std::vector<int64_t> bounds)
    : model_(model),
      comm_(comm),
      bounds_(std::move(bounds)),
      own_begin_(bounds_[comm->rank()]),
      own_end_(bounds_[comm->rank() + 1]),
      params_(model->layout().size()) {
  // One rank owns everything: every parameter is whole from the start.
  for (Param& p : params_) p.whole = comm->size() == 1;
}

ParamGather::~ParamGather() {
  for (Param& p : params_) {
    if (p.fetch != nullptr) p.fetch->Wait().IgnoreError();
  }
}

int64_t ParamGather::Unowned(int p) const {
  const nn::ParamInfo& info = model_->layout().param(p);
  const int64_t begin = info.offset, end = info.offset + info.numel;
  const int64_t owned = std::max<int64_t>(0, std::min(end, own_end_) - std::max(begin, own_begin_));
  return info.numel - owned;
}

void ParamGather::Gather(int first, int last) {
  const nn::ParamLayout& layout = model_->layout();
  const auto [begin, end] = layout.Elements(first, last);
  std::vector<int64_t> bounds(bounds_.size());
  for (size_t r = 0; r < bounds.size(); ++r) bounds[r] = std::clamp(bounds_[r], begin, end) - begin;
  // A device model maps the range back first; host pages come back as the gather writes them.
  absl::Status mapped = model_->CommitParams(begin, end);
  std::shared_ptr<comm::Work> work = mapped.ok()
                                         ? comm_->AllGatherBlocks(model_->params().subspan(begin, end - begin), bounds)
                                         : comm::CompletedWork(std::move(mapped));
  for (int p = first; p < last; ++p) {
    params_[p].fetch = work;
    params_[p].whole = true;
    gathered_ += Unowned(p);
  }
  peak_gathered_ = std::max(peak_gathered_, gathered_);
}

void ParamGather::Fetch(const nn::ParamUnit& unit) {
  for (const nn::ParamRange& range : unit) {
    int run = range.first;  // start of the current run of parameters to gather
    for (int p = range.first; p <= range.last; ++p) {
      if (p < range.last && !params_[p].whole) continue;
      if (run < p) Gather(run, p);
      run = p + 1;
    }
  }
}

absl::Status ParamGather::Acquire(const nn::ParamUnit& unit, const nn::ParamUnit* next) {
  Fetch(unit);
  absl::Status status;
  for (const nn::ParamRange& range : unit) {
    for (int p = range.first; p < range.last; ++p) {
      Param& param = params_[p];
      ++param.holders;
      param.wanted = false;
      if (param.fetch == nullptr) continue;
      if (absl::Status s = param.fetch->Wait(); !s.ok() && status.ok()) status = s;
      param.fetch = nullptr;
    }
  }
  if (!status.ok()) return status;
  if (next != nullptr) {
    Fetch(*next);
    for (const nn::ParamRange& range : *next) {
      for (int p = range.first; p < range.last; ++p) params_[p].wanted = true;
    }
  }
  return absl::OkStatus();
}

void ParamGather::Release(const nn::ParamUnit& unit) {
  for (const nn::ParamRange& range : unit) {
    int run = range.first;  // start of the current run of parameters to discard
    for (int p = range.first; p <= range.last; ++p) {
      if (p < range.last) {
        Param& param = params_[p];
        if (param.holders > 0) --param.holders;
        if (param.holders == 0 && !param.wanted && param.fetch == nullptr && param.whole) continue;
      }
      if (run < p) Discard(run, p);
      run = p + 1;
    }
  }
}

void ParamGather::Discard(int first, int last) {
  if (comm_->size() == 1) return;  // everything is this rank's
  const nn::ParamLayout& layout = model_->layout();
  const auto [begin, end] = layout.Elements(first, last);
  // One range for the run, so that only its two ends can leave partial pages behind.
  if (begin < own_begin_) model_->DiscardParams(begin, std::min(end, own_begin_));
  if (end > own_end_) model_->DiscardParams(std::max(begin, own_end_), end);
  for (int p = first; p < last; ++p) {
    gathered_ -= Unowned(p);
    params_[p] = Param{};
  }
}

void ParamGather::InitParams(uint64_t seed) {
  for (int p = 0; p < model_->layout().size(); ++p) {
    model_->InitParamRange(seed, p, p + 1);
    DiscardUnowned(p, p + 1);
  }
}

void ParamGather::DiscardUnowned(int first, int last) {
  if (comm_->size() == 1 || first >= last) return;
  for (int p = first; p < last; ++p) {
    if (!params_[p].whole) gathered_ += Unowned(p);  // Discard takes it off again
  }
  Discard(first, last);
}

}  // namespace gradsync::ddp
