#include "gradsync/device/gpu_peak.h"

#include <array>

namespace gradsync::device {
namespace {

struct Peak {
  std::string_view name_part;
  double flops;
};

// NVIDIA's data sheets, dense bf16 tensor-core figures (their headline numbers are with 2:4
// sparsity, twice these). Checked in order: the first name part found in the model name wins, so
// variants come before their family.
constexpr std::array kPeaks = {
    Peak{"H100 PCIe", 756.0e12}, Peak{"H100 NVL", 835.5e12}, Peak{"H100", 989.4e12},  Peak{"H200 NVL", 835.5e12},
    Peak{"H200", 989.4e12},      Peak{"GH200", 989.4e12},    Peak{"H800", 989.4e12},  Peak{"B200", 2250.0e12},
    Peak{"A100", 312.0e12},      Peak{"A800", 312.0e12},     Peak{"L40S", 362.05e12}, Peak{"A10G", 70.0e12},
    Peak{"RTX 4090", 165.2e12},
};

}  // namespace

double DenseBf16PeakFlops(std::string_view gpu_name) {
  for (const Peak& p : kPeaks) {
    if (gpu_name.find(p.name_part) != std::string_view::npos) return p.flops;
  }
  return 0;
}

}  // namespace gradsync::device
