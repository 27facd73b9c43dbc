// Where each parameter lives inside one contiguous buffer. Parameters and their gradients share
// the layout, so a gradient bucket is a plain range of the gradient buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gradsync::nn {

struct ParamInfo {
  std::string name;            // e.g. "layers.0.weight"
  std::vector<int64_t> shape;  // row-major
  int64_t offset = 0;          // in elements, from the start of the buffer
  int64_t numel = 0;
  bool weight_decay = true;  // false for biases and norm gains
};

class ParamLayout {
 public:
  // Appends a parameter after the previous ones; returns its index.
  int Add(std::string name, std::vector<int64_t> shape, bool weight_decay);

  const std::vector<ParamInfo>& params() const { return params_; }
  const ParamInfo& param(int index) const { return params_[index]; }
  int size() const { return static_cast<int>(params_.size()); }
  int64_t total_numel() const { return total_; }

  // The elements of parameter `index` within a buffer laid out by this layout.
  std::span<float> View(std::span<float> buffer, int index) const {
    return buffer.subspan(params_[index].offset, params_[index].numel);
  }
  std::span<const float> View(std::span<const float> buffer, int index) const {
    return buffer.subspan(params_[index].offset, params_[index].numel);
  }

  // The elements [first, second) of a buffer that parameters [first, last) cover (adjacent in
  // the buffer, as they are in the layout); {0, 0} when first >= last.
  std::pair<int64_t, int64_t> Elements(int first, int last) const {
    if (first >= last) return {0, 0};
    return {params_[first].offset, params_[last - 1].offset + params_[last - 1].numel};
  }

  // A digest of names, shapes and offsets: equal layouts have equal hashes.
  uint64_t Hash() const;

 private:
  std::vector<ParamInfo> params_;
  int64_t total_ = 0;
};

}  // namespace gradsync::nn
