// Device-only pieces of the tensor-core kernels: the m16n8k16 bf16 product (fragments in
// mma_fragments.h), the ldmatrix fragment loads, asynchronous 16-byte copies from global to shared
// memory (cp.async), all sm_80 and later, and the block's dynamic shared memory. Compiled for an
// older architecture these trap, and the launchers refuse such devices before launching.
#pragma once

#include "mma_fragments.h"

#ifdef GRADSYNC_WARP_EMULATION
// The host emulation of tests/kernels_emulated supplies these names, run by host threads standing
// in for the block's.
#include "warp_emulation.h"
#else

namespace gradsync::kernels::cuda::mma {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define GRADSYNC_MMA_UNSUPPORTED 1
#endif

// The block's dynamic shared memory (16-byte aligned).
__device__ __forceinline__ unsigned char* SharedMemory() {
  extern __shared__ __align__(16) unsigned char dynamic_smem[];
  return dynamic_smem;
}

// d += a b.
__device__ __forceinline__ void Mma(FragC& d, const FragA& a, const FragB& b) {
#ifndef GRADSYNC_MMA_UNSUPPORTED
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d.v[0]), "+f"(d.v[1]), "+f"(d.v[2]), "+f"(d.v[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
#else
  __trap();
#endif
}

// ldmatrix .x4 (kTrans: .x4.trans) with this lane naming `row` (mma_fragments.h); shared memory.
template <bool kTrans>
__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], const bf16* row) {
#ifndef GRADSYNC_MMA_UNSUPPORTED
  const unsigned smem = static_cast<unsigned>(__cvta_generic_to_shared(row));
  if constexpr (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem));
  }
#else
  __trap();
#endif
}

// Starts copying 16 bytes from global `src` to shared `dst` (both 16-byte aligned); with `valid`
// false it writes 16 zero bytes and reads nothing (src must still be a mapped address).
__device__ __forceinline__ void CopyAsync16(void* dst, const void* src, bool valid) {
#ifndef GRADSYNC_MMA_UNSUPPORTED
  const unsigned smem = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(src), "r"(valid ? 16 : 0));
#else
  __trap();
#endif
}

// Closes the copies started since the last commit into one group.
__device__ __forceinline__ void CommitCopies() {
#ifndef GRADSYNC_MMA_UNSUPPORTED
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `kPending` of this thread's committed groups are still in flight. Other
// threads' copies become visible after a following __syncthreads().
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
#ifndef GRADSYNC_MMA_UNSUPPORTED
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

}  // namespace gradsync::kernels::cuda::mma

#endif  // GRADSYNC_WARP_EMULATION

namespace gradsync::kernels::cuda::mma {

// Two LoadBNk in one instruction: b0 for the k16 chunk at m, b1 for the one at m + 16.
__device__ __forceinline__ void LoadBNkPair(FragB& b0, FragB& b1, const bf16* m, int ld, int lane) {
  uint32_t r[4];
  LdMatrixX4<false>(r, BNkPairRow(m, ld, lane));
  b0 = {{r[0], r[1]}};
  b1 = {{r[2], r[3]}};
}

// Two LoadBKn in one instruction: b0 for the n8 tile at m, b1 for the one at m + 8.
__device__ __forceinline__ void LoadBKnPair(FragB& b0, FragB& b1, const bf16* m, int ld, int lane) {
  uint32_t r[4];
  LdMatrixX4<true>(r, BKnPairRow(m, ld, lane));
  b0 = {{r[0], r[1]}};
  b1 = {{r[2], r[3]}};
}

}  // namespace gradsync::kernels::cuda::mma
