// How a backward launcher stores an input gradient.
#pragma once

namespace gradsync::kernels::cuda {

// kAccumulate: added to what the buffer holds, as the CPU reference does; for a gradient that
// several operations add to (a residual stream, a tied embedding).
// kOverwrite: written over the buffer, whose old contents are never read: no zeroing pass
// before the call and no read of the buffer during it. For a gradient only this call produces.
enum class GradMode { kAccumulate, kOverwrite };

}  // namespace gradsync::kernels::cuda
