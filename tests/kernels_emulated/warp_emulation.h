// Runs CUDA kernels written for kernels/cuda on the host: one host thread per CUDA thread, one
// block at a time, with the block barrier, the warp shuffles, the tensor-core product
// (mma.sync.m16n8k16, bf16 in, fp32 accumulate, per the PTX ISA's fragment tables) and ldmatrix as
// collectives among those threads. Compiled with GRADSYNC_WARP_EMULATION, kernels/cuda/src/mma.cuh
// takes Mma, LdMatrixX4, the asynchronous copies and SharedMemory from here.
//
// Include this first: it includes the CUDA headers the kernels need, then redefines the CUDA
// keywords and built-ins (__global__, threadIdx, __syncthreads, ...) for the host compiler.
//
// What it checks: the kernels' arithmetic, indexing, fragment layouts, masking and the
// cooperation of their threads through shared memory, with real concurrency between the
// threads; with the asynchronous copies landing at either end of their window (copy_landing),
// both a buffer refilled while other warps still read it and a read before its copy was waited
// for. What it cannot: timing, and the hardware's order of fp32 sums inside one product.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cuda_runtime_api.h>

#include <array>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "mma_fragments.h"

namespace gradsync::emulation {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

inline thread_local Dim3 thread_idx;
inline thread_local Dim3 block_idx;
inline Dim3 grid_dim;
inline Dim3 block_dim;

inline constexpr int kWarp = 32;

// The block being run; blocks run one after another.
struct Block {
  explicit Block(int threads, size_t smem_bytes)
      : all(threads), exchange(static_cast<size_t>(threads)), smem(smem_bytes + 16) {
    for (int w = 0; w < threads / kWarp; ++w) warps.push_back(std::make_unique<std::barrier<>>(kWarp));
    std::memset(smem.data(), 0xCD, smem.size());  // poison: a read before any write shows
  }
  std::barrier<> all;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<std::array<uint32_t, 8>> exchange;  // per thread, for the warp collectives
  std::vector<unsigned char> smem;
};
inline Block* current = nullptr;

// When a thread's cp.async copies land in shared memory. kAtIssue: at once, so a kernel that
// starts refilling a buffer before every warp is done reading it reads the new data. kAtWait: only
// when the thread waits for their group (cp.async.wait_group), so a kernel that reads a tile
// before waiting for it, or before the barrier after the wait, reads stale or poisoned bytes.
// The hardware lands them anywhere in between.
enum class CopyLanding { kAtIssue, kAtWait };
inline CopyLanding copy_landing = CopyLanding::kAtIssue;

// A copy that has not landed yet: its destination and the 16 bytes it read (zeros for a copy
// with no source).
struct PendingCopy {
  void* dst;
  std::array<unsigned char, 16> bytes;
};
inline thread_local std::vector<PendingCopy> open_group;             // since the last commit
inline thread_local std::deque<std::vector<PendingCopy>> committed;  // oldest first

inline void Land(const std::vector<PendingCopy>& group) {
  for (const PendingCopy& c : group) std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
}

inline int Tid() { return static_cast<int>(thread_idx.x); }
inline void WarpBarrier() { current->warps[Tid() / kWarp]->arrive_and_wait(); }
inline void SyncThreads() { current->all.arrive_and_wait(); }

template <typename V>
V ShflXor(V v, int offset) {
  static_assert(sizeof(V) <= 8);
  const int tid = Tid();
  std::memcpy(current->exchange[tid].data(), &v, sizeof(V));
  WarpBarrier();
  const int peer = (tid / kWarp) * kWarp + ((tid % kWarp) ^ offset);
  V out;
  std::memcpy(&out, current->exchange[peer].data(), sizeof(V));
  WarpBarrier();
  return out;
}

inline float HalfOf(uint32_t reg, int half) {
  const uint32_t bits = half == 0 ? reg << 16 : reg & 0xffff0000u;
  return std::bit_cast<float>(bits);
}

// d += a b across the warp: every lane publishes its fragments, then computes its own four
// outputs from everyone's. A's element (row, col) lies in lane 4 (row % 8) + (col % 8) / 2,
// register (row / 8) + 2 (col / 8), half col % 2; B's (k, n) in lane 4 n + (k % 8) / 2, register
// k / 8, half k % 2; C's element i of a lane is (group + 8 (i / 2), 2 quad + i % 2).
inline void Mma(kernels::cuda::mma::FragC& d, const kernels::cuda::mma::FragA& a, const kernels::cuda::mma::FragB& b) {
  const int tid = Tid(), base = (tid / kWarp) * kWarp, lane = tid % kWarp;
  auto& mine = current->exchange[tid];
  for (int r = 0; r < 4; ++r) mine[r] = a.r[r];
  mine[4] = b.r[0];
  mine[5] = b.r[1];
  WarpBarrier();
  const auto a_at = [&](int row, int col) {
    const auto& x = current->exchange[base + 4 * (row % 8) + (col % 8) / 2];
    return HalfOf(x[(row / 8) + 2 * (col / 8)], col % 2);
  };
  const auto b_at = [&](int k, int n) {
    const auto& x = current->exchange[base + 4 * n + (k % 8) / 2];
    return HalfOf(x[4 + k / 8], k % 2);
  };
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
    float sum = 0.0f;
    for (int k = 0; k < 16; ++k) sum += a_at(row, k) * b_at(k, col);
    out[i] = sum;
  }
  WarpBarrier();
  for (int i = 0; i < 4; ++i) d.v[i] += out[i];
}

// ldmatrix .x4[.trans] across the warp: every lane publishes the row it names, then takes its four
// registers from everyone's rows (mma_fragments.h's LdMatrixModel). The rows must lie in the
// block's shared memory, 16-byte aligned, as the instruction requires.
inline void LdMatrixX4(uint32_t (&r)[4], const kernels::cuda::mma::bf16* row, bool trans) {
  const int tid = Tid(), base = (tid / kWarp) * kWarp, lane = tid % kWarp;
  const auto addr = reinterpret_cast<uintptr_t>(row);
  const auto smem = reinterpret_cast<uintptr_t>(current->smem.data());
  if (addr % 16 != 0 || addr < smem || addr + 16 > smem + current->smem.size()) {
    std::fprintf(stderr, "warp emulation: ldmatrix row of thread %d is not 16 aligned bytes of shared memory\n", tid);
    std::abort();
  }
  std::memcpy(current->exchange[tid].data(), &row, sizeof(row));
  WarpBarrier();
  const kernels::cuda::mma::bf16* rows[kWarp];
  for (int l = 0; l < kWarp; ++l) std::memcpy(&rows[l], current->exchange[base + l].data(), sizeof(rows[l]));
  for (int i = 0; i < 4; ++i) r[i] = kernels::cuda::mma::LdMatrixModel(rows, i, lane, trans);
  WarpBarrier();
}

// Runs kernel() for every thread of every block of `grid` (threads in x only).
inline void Launch(Dim3 grid, int threads, size_t smem_bytes, const std::function<void()>& kernel) {
  grid_dim = grid;
  block_dim = {static_cast<unsigned>(threads), 1, 1};
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        Block block(threads, smem_bytes);
        current = &block;
        std::vector<std::thread> pool;
        pool.reserve(static_cast<size_t>(threads));
        for (int t = 0; t < threads; ++t) {
          pool.emplace_back([&, t] {
            thread_idx = {static_cast<unsigned>(t), 0, 0};
            block_idx = {x, y, z};
            kernel();
            if (!open_group.empty() || !committed.empty()) {
              // Copies nobody waited for: their data was never safe to read.
              std::fprintf(stderr,
                           "warp emulation: thread %d of block (%u, %u, %u) ended with cp.async copies "
                           "it never waited for\n",
                           t, x, y, z);
              std::abort();
            }
          });
        }
        for (std::thread& th : pool) th.join();
        current = nullptr;
      }
    }
  }
}

}  // namespace gradsync::emulation

// ---- what mma.cuh declares on the device ----
namespace gradsync::kernels::cuda::mma {

inline unsigned char* SharedMemory() {
  // 16-byte aligned within the block's buffer.
  const auto p = reinterpret_cast<uintptr_t>(emulation::current->smem.data());
  return reinterpret_cast<unsigned char*>((p + 15) / 16 * 16);
}
inline void Mma(FragC& d, const FragA& a, const FragB& b) { emulation::Mma(d, a, b); }
template <bool kTrans>
inline void LdMatrixX4(uint32_t (&r)[4], const bf16* row) {
  emulation::LdMatrixX4(r, row, kTrans);
}
inline void CopyAsync16(void* dst, const void* src, bool valid) {
  emulation::PendingCopy copy{dst, {}};
  if (valid) std::memcpy(copy.bytes.data(), src, copy.bytes.size());
  if (emulation::copy_landing == emulation::CopyLanding::kAtIssue) {
    emulation::Land({copy});
  }
  emulation::open_group.push_back(copy);  // landed or not, it belongs to the next group
}
inline void CommitCopies() {
  emulation::committed.push_back(std::move(emulation::open_group));
  emulation::open_group.clear();
}
template <int kPending>
inline void WaitCopies() {
  while (emulation::committed.size() > kPending) {
    if (emulation::copy_landing == emulation::CopyLanding::kAtWait) emulation::Land(emulation::committed.front());
    emulation::committed.pop_front();
  }
}

}  // namespace gradsync::kernels::cuda::mma

// ---- CUDA keywords and built-ins for the host compiler ----
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#undef __align__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define threadIdx (::gradsync::emulation::thread_idx)
#define blockIdx (::gradsync::emulation::block_idx)
#define gridDim (::gradsync::emulation::grid_dim)
#define blockDim (::gradsync::emulation::block_dim)

inline void __syncthreads() { gradsync::emulation::SyncThreads(); }
template <typename V>
V __shfl_xor_sync(unsigned /*mask*/, V v, int offset) {
  return gradsync::emulation::ShflXor(v, offset);
}
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
[[noreturn]] inline void __trap() { std::abort(); }
