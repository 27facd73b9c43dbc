// Runs CUDA kernels written for kernels/cuda on the host: every CUDA thread of a block is a fiber
// (its own stack, switched with ucontext) on the calling thread, blocks one after another. The
// block barrier, the warp shuffles, the tensor-core product (mma.sync.m16n8k16, bf16 in, fp32
// accumulate, per the PTX ISA's fragment tables) and ldmatrix are collectives among those
// fibers. Compiled with GRADSYNC_WARP_EMULATION, kernels/cuda/src/mma.cuh takes Mma, LdMatrixX4,
// the asynchronous copies and SharedMemory from here, and common.cuh's LaunchKernel and
// DynamicShared run their kernels through Launch.
//
// Include this first: it includes the CUDA headers the kernels need, then redefines the CUDA
// keywords and built-ins (__global__, __shared__, threadIdx, __syncthreads, ...) for the host
// compiler.
//
// A fiber runs until it reaches a barrier or a warp collective; then the first thread in order
// that can run does, so the first warp runs as far ahead of the others as the barriers allow
// (thread order on even launches, reverse order on odd ones: `order`). So a kernel that reads
// shared memory another warp writes without a barrier between them reads it stale, or a buffer
// refilled before every warp is done with it, under one of the two orders; with the
// asynchronous copies landing at either end of their window (copy_landing), both a buffer
// refilled while other warps still read it and a read before its copy was waited for show. A
// thread that leaves while its warp waits in a collective, a collective of a partial warp and a
// barrier nobody can pass abort the run, as they would hang or be undefined on the GPU.
//
// What it cannot show: timing, the hardware's order of fp32 sums inside one product, and reads
// of a static __shared__ array before any write (those arrays are function statics, zeroed once
// and kept from block to block; the dynamic shared memory starts poisoned in every block).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <type_traits>
#include <vector>

#include "mma_fragments.h"

namespace gradsync::emulation {

using Dim3 = dim3;

inline constexpr int kWarp = 32;
inline constexpr int kMaxThreads = 1024;
inline constexpr size_t kStackBytes = size_t{256} << 10;

// When a thread's cp.async copies land in shared memory. kAtIssue: at once, so a kernel that
// starts refilling a buffer before every warp is done reading it reads the new data. kAtWait: only
// when the thread waits for their group (cp.async.wait_group), so a kernel that reads a tile
// before waiting for it, or before the barrier after the wait, reads stale or poisoned bytes.
// The hardware lands them anywhere in between.
enum class CopyLanding { kAtIssue, kAtWait };
inline CopyLanding copy_landing = CopyLanding::kAtIssue;

// The order the threads of a block run in between barriers; Launch alternates it.
enum class Order { kForward, kReverse };
inline Order order = Order::kForward;

// A copy that has not landed yet: its destination and the 16 bytes it read (zeros for a copy
// with no source).
struct PendingCopy {
  void* dst;
  std::array<unsigned char, 16> bytes;
};

// Passed once every expected thread has arrived; a generation counter tells the waiters.
struct Barrier {
  int arrived = 0;
  uint64_t generation = 0;
};

// One CUDA thread.
struct Fiber {
  ucontext_t context;
  unsigned char* stack = nullptr;
  dim3 thread_idx;
  int tid = 0;  // linear index in the block
  bool done = false;
  const Barrier* waiting = nullptr;
  uint64_t waiting_for = 0;
  std::vector<PendingCopy> open_group;             // since the last commit
  std::deque<std::vector<PendingCopy>> committed;  // oldest first
};

// The block being run; blocks run one after another.
struct Block {
  Block(int threads, size_t smem_bytes)
      : threads(threads),
        live(threads),
        warps(static_cast<size_t>((threads + kWarp - 1) / kWarp)),
        warp_live(warps.size(), 0),
        exchange(static_cast<size_t>(threads)),
        smem(smem_bytes + 16) {
    for (int t = 0; t < threads; ++t) ++warp_live[static_cast<size_t>(t / kWarp)];
    std::memset(smem.data(), 0xCD, smem.size());  // poison: a read before any write shows
  }
  int threads;
  int live;  // threads that have not returned
  Barrier all;
  std::vector<Barrier> warps;
  std::vector<int> warp_live;
  std::vector<std::array<uint32_t, 8>> exchange;  // per thread, for the warp collectives
  std::vector<unsigned char> smem;
};

inline Block* current = nullptr;
inline Fiber* running = nullptr;
inline ucontext_t scheduler;
inline const std::function<void()>* kernel_body = nullptr;
inline dim3 block_idx;
inline dim3 grid_dim;
inline dim3 block_dim;

[[noreturn]] inline void Fail(const char* what) {
  std::fprintf(stderr, "warp emulation: %s (thread %d of block (%u, %u, %u))\n", what, running ? running->tid : -1,
               block_idx.x, block_idx.y, block_idx.z);
  std::abort();
}

// The fibers, with their stacks (each below a guard page), made once and reused by every block.
inline std::vector<Fiber>& Fibers() {
  static std::vector<Fiber> fibers = [] {
    std::vector<Fiber> made(kMaxThreads);
    const size_t page = 4096, span = kStackBytes + page;
    void* base =
        mmap(nullptr, span * kMaxThreads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) Fail("cannot map the fiber stacks");
    for (int t = 0; t < kMaxThreads; ++t) {
      unsigned char* region = static_cast<unsigned char*>(base) + span * static_cast<size_t>(t);
      mprotect(region, page, PROT_NONE);  // an overflowing stack faults instead of corrupting the next
      made[static_cast<size_t>(t)].stack = region + page;
    }
    return made;
  }();
  return fibers;
}

inline int Tid() { return running->tid; }

// Set when a barrier passes: the scheduler looks again from the first thread in order.
inline bool rescan = false;

inline void Release(Barrier& b) {
  b.arrived = 0;
  ++b.generation;
  rescan = true;
}

// Arrives at `b`, which passes once `expected` threads have; the others wait in the scheduler.
inline void Arrive(Barrier& b, int expected) {
  if (++b.arrived >= expected) {
    Release(b);
    return;
  }
  running->waiting = &b;
  running->waiting_for = b.generation;
  swapcontext(&running->context, &scheduler);
}

// The warp's 32 lanes meet; all must be live (a shuffle with a lane gone is undefined on the GPU).
inline void WarpBarrier() {
  const size_t w = static_cast<size_t>(Tid() / kWarp);
  if (current->warp_live[w] != kWarp) Fail("warp collective without all 32 lanes of the warp");
  Arrive(current->warps[w], kWarp);
}
// Threads that have returned no longer count, as on sm_70 and later.
inline void SyncThreads() { Arrive(current->all, current->live); }

inline void Land(const std::vector<PendingCopy>& group) {
  for (const PendingCopy& c : group) std::memcpy(c.dst, c.bytes.data(), c.bytes.size());
}

inline void FiberMain() {
  (*kernel_body)();
  Fiber& f = *running;
  if (!f.open_group.empty() || !f.committed.empty()) Fail("ended with cp.async copies it never waited for");
  f.done = true;
  --current->live;
  const size_t w = static_cast<size_t>(f.tid / kWarp);
  --current->warp_live[w];
  if (current->warps[w].arrived > 0) Fail("returned while its warp waits in a collective");
  if (current->all.arrived > 0 && current->all.arrived >= current->live) Release(current->all);
  // returning resumes the scheduler (uc_link)
}

inline void RunBlock(int threads, const dim3& block) {
  std::vector<Fiber>& fibers = Fibers();
  for (int t = 0; t < threads; ++t) {
    Fiber& f = fibers[static_cast<size_t>(t)];
    f.tid = t;
    f.thread_idx = dim3(static_cast<unsigned>(t) % block.x, static_cast<unsigned>(t) / block.x % block.y,
                        static_cast<unsigned>(t) / (block.x * block.y));
    f.done = false;
    f.waiting = nullptr;
    f.open_group.clear();
    f.committed.clear();
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &scheduler;
    makecontext(&f.context, FiberMain, 0);
  }
  // The first runnable thread in order runs until it waits: a warp runs as far ahead of the
  // later ones as the barriers let it. Threads before position k are done or still waiting.
  const auto at = [&](int k) -> Fiber& {
    return fibers[static_cast<size_t>(order == Order::kForward ? k : threads - 1 - k)];
  };
  int remaining = threads, k = 0;
  while (remaining > 0) {
    while (k < threads) {
      const Fiber& f = at(k);
      if (!f.done && (f.waiting == nullptr || f.waiting->generation != f.waiting_for)) break;
      ++k;
    }
    if (k == threads) {
      running = nullptr;
      Fail("deadlock: every live thread waits at a barrier that cannot pass");
    }
    Fiber& f = at(k);
    f.waiting = nullptr;
    running = &f;
    rescan = false;
    swapcontext(&scheduler, &f.context);
    if (f.done) --remaining;
    if (rescan) k = 0;
  }
  running = nullptr;
}

// Runs kernel() for every thread of every block of `grid`, blocks in x, then y, then z order.
inline void Launch(dim3 grid, dim3 block, size_t smem_bytes, const std::function<void()>& kernel) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads) Fail("a block of 0 or more than 1024 threads");
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) Fail("an empty grid");
  grid_dim = grid;
  block_dim = block;
  kernel_body = &kernel;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        Block b(static_cast<int>(threads), smem_bytes);
        current = &b;
        block_idx = dim3(x, y, z);
        RunBlock(static_cast<int>(threads), block);
        current = nullptr;
      }
    }
  }
  kernel_body = nullptr;
  order = order == Order::kForward ? Order::kReverse : Order::kForward;
}

// ---- the runtime's view of launches (runtime_emulation.cc) ----

// What the next cudaGetLastError returns: a launch the GPU would refuse sets it.
inline cudaError_t pending_error = cudaSuccess;

// Dynamic shared memory a kernel may use: 48 KiB unless cudaFuncSetAttribute raised it.
inline constexpr size_t kDefaultSharedBytes = size_t{48} << 10;
inline std::map<const void*, size_t>& SharedMemoryLimits() {
  static std::map<const void*, size_t> limits;
  return limits;
}
inline void SetSharedMemoryLimit(const void* func, size_t bytes) { SharedMemoryLimits()[func] = bytes; }

// A launch as the runtime takes it: a configuration the GPU refuses (block size, grid limits,
// shared memory above the kernel's limit) runs nothing and sets the error the GPU would.
inline void LaunchChecked(const void* func, dim3 grid, dim3 block, size_t smem_bytes,
                          const std::function<void()>& kernel) {
  const auto limits = SharedMemoryLimits().find(func);
  const size_t smem_limit = limits == SharedMemoryLimits().end() ? kDefaultSharedBytes : limits->second;
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || threads > kMaxThreads || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.y > 65535 || grid.z > 65535) {
    pending_error = cudaErrorInvalidConfiguration;
    return;
  }
  if (smem_bytes > smem_limit) {
    pending_error = cudaErrorInvalidValue;
    return;
  }
  Launch(grid, block, smem_bytes, kernel);
}

template <typename V>
V ShflFrom(V v, int peer_lane) {
  static_assert(sizeof(V) <= 8);
  const int tid = Tid();
  std::memcpy(current->exchange[static_cast<size_t>(tid)].data(), &v, sizeof(V));
  WarpBarrier();
  const int peer = (tid / kWarp) * kWarp + (peer_lane & (kWarp - 1));
  V out;
  std::memcpy(&out, current->exchange[static_cast<size_t>(peer)].data(), sizeof(V));
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
  auto& mine = current->exchange[static_cast<size_t>(tid)];
  for (int r = 0; r < 4; ++r) mine[static_cast<size_t>(r)] = a.r[r];
  mine[4] = b.r[0];
  mine[5] = b.r[1];
  WarpBarrier();
  const auto a_at = [&](int row, int col) {
    const auto& x = current->exchange[static_cast<size_t>(base + 4 * (row % 8) + (col % 8) / 2)];
    return HalfOf(x[static_cast<size_t>((row / 8) + 2 * (col / 8))], col % 2);
  };
  const auto b_at = [&](int k, int n) {
    const auto& x = current->exchange[static_cast<size_t>(base + 4 * n + (k % 8) / 2)];
    return HalfOf(x[static_cast<size_t>(4 + k / 8)], k % 2);
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
    Fail("ldmatrix row is not 16 aligned bytes of shared memory");
  }
  std::memcpy(current->exchange[static_cast<size_t>(tid)].data(), &row, sizeof(row));
  WarpBarrier();
  const kernels::cuda::mma::bf16* rows[kWarp];
  for (int l = 0; l < kWarp; ++l)
    std::memcpy(&rows[l], current->exchange[static_cast<size_t>(base + l)].data(), sizeof(rows[l]));
  for (int i = 0; i < 4; ++i) r[i] = kernels::cuda::mma::LdMatrixModel(rows, i, lane, trans);
  WarpBarrier();
}

// The block's dynamic shared memory, 16-byte aligned.
inline unsigned char* BlockSharedMemory() {
  const auto p = reinterpret_cast<uintptr_t>(current->smem.data());
  return reinterpret_cast<unsigned char*>((p + 15) / 16 * 16);
}

}  // namespace gradsync::emulation

// ---- what mma.cuh declares on the device ----
namespace gradsync::kernels::cuda::mma {

inline unsigned char* SharedMemory() { return emulation::BlockSharedMemory(); }
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
  emulation::running->open_group.push_back(copy);  // landed or not, it belongs to the next group
}
inline void CommitCopies() {
  emulation::Fiber& f = *emulation::running;
  f.committed.push_back(std::move(f.open_group));
  f.open_group.clear();
}
template <int kPending>
inline void WaitCopies() {
  emulation::Fiber& f = *emulation::running;
  while (f.committed.size() > kPending) {
    if (emulation::copy_landing == emulation::CopyLanding::kAtWait) emulation::Land(f.committed.front());
    f.committed.pop_front();
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
// Blocks run one at a time, so a function-local static is one array per block, shared by its threads.
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define threadIdx (::gradsync::emulation::running->thread_idx)
#define blockIdx (::gradsync::emulation::block_idx)
#define gridDim (::gradsync::emulation::grid_dim)
#define blockDim (::gradsync::emulation::block_dim)

inline void __syncthreads() { gradsync::emulation::SyncThreads(); }
template <typename V>
V __shfl_xor_sync(unsigned /*mask*/, V v, int offset) {
  return gradsync::emulation::ShflFrom(v, (gradsync::emulation::Tid() % gradsync::emulation::kWarp) ^ offset);
}
template <typename V>
V __shfl_sync(unsigned /*mask*/, V v, int src_lane) {
  return gradsync::emulation::ShflFrom(v, src_lane);
}
// CUDA's device min and max of two numbers.
template <typename A, typename B, typename = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
std::common_type_t<A, B> min(A a, B b) {
  return b < a ? b : a;
}
template <typename A, typename B, typename = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
std::common_type_t<A, B> max(A a, B b) {
  return a < b ? b : a;
}
inline float __uint_as_float(unsigned u) { return std::bit_cast<float>(u); }
[[noreturn]] inline void __trap() { gradsync::emulation::Fail("__trap"); }
