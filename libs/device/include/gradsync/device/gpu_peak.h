// The dense bf16 tensor-core peak of a GPU, from the model name CUDA reports: what model FLOPs
// utilisation (MFU) is measured against, as PaLM and nanoGPT define it (dense peak, no sparsity).
#pragma once

#include <string_view>

namespace gradsync::device {

// FLOP/s, e.g. 989.4e12 for "NVIDIA H100 80GB HBM3"; 0 for a name the table does not know (a
// summary then shows no MFU rather than a wrong one). The table is in gpu_peak.cc with its sources.
double DenseBf16PeakFlops(std::string_view gpu_name);

}  // namespace gradsync::device
