#include "gradsync/nn/param_layout.h"

#include <cstddef>
#include <span>
#include <utility>

#include "gradsync/core/digest.h"
#include "gradsync/core/rng.h"

namespace gradsync::nn {

int ParamLayout::Add(std::string name, std::vector<int64_t> shape, bool weight_decay) {
  ParamInfo info;
  info.name = std::move(name);
  info.shape = std::move(shape);
  info.offset = total_;
  info.numel = 1;
  for (int64_t dim : info.shape) info.numel *= dim;
  info.weight_decay = weight_decay;
  total_ += info.numel;
  params_.push_back(std::move(info));
  return size() - 1;
}

uint64_t ParamLayout::Hash() const {
  // Counts are mixed in before each list so that, e.g., shapes [2, 3] + [4] and [2] + [3, 4]
  // differ.
  uint64_t h = HashCombine(0, params_.size());
  for (const ParamInfo& p : params_) {
    h = HashCombine(h, Fnv1a64(std::as_bytes(std::span(p.name.data(), p.name.size()))));
    h = HashCombine(h, p.shape.size());
    for (int64_t dim : p.shape) h = HashCombine(h, static_cast<uint64_t>(dim));
    h = HashCombine(h, static_cast<uint64_t>(p.offset));
  }
  return h;
}

}  // namespace gradsync::nn
