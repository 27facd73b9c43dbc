// Operand fragments of the warp-level bf16 tensor-core product mma.sync.m16n8k16 (fp32
// accumulate), D[16x8] += A[16x16] B[16x8], and where each lane's registers come from.
//
// A lane is 4 group + quad (group 0..7, quad 0..3). Per the PTX ISA's fragment tables:
//   A (row major, 4 registers of 2 bf16): register r holds row group + 8 (r & 1),
//     columns 2 quad + 8 (r >> 1) and the one after (the lower column in the low half);
//   B (column major, 2 registers): register r holds column group, rows 2 quad + 8 r and the one
//     after;
//   C and D (4 floats): element i is row group + 8 (i >> 1), column 2 quad + (i & 1).
// So the C fragments of two neighbouring 8-column tiles are, rounded to bf16, the A fragment of
// their 16 columns (AFromC): a product's result feeds the next product with no data movement.
//
// Loaders read a tile from row-major storage (shared memory in the kernels) given the address of
// its first element and its row pitch in elements:
//   LoadA     A[16][16] stored as rows of A;
//   LoadBNk   B[16][8] stored as rows of B^T ([n][k]: each row holds one column of B), the
//             layout of the keys when B = K^T; two bf16 neighbours per register, one load each;
//   LoadBKn   B[16][8] stored as rows of B ([k][n]), the layout of the values in P V; the two
//             halves of a register come from two rows.
// Pair loads need an even pitch and a 4-byte aligned start. Everything here but Mma runs on the
// host as well, so tests can check the layouts without a GPU (tests/kernels_cuda).
//
// The kernels' inner loops load B through ldmatrix instead (mma.cuh's LoadBNkPair, LoadBKnPair),
// four 8x8 matrices per instruction: the same registers as two LoadBNk / LoadBKn, with a quarter
// to an eighth of the load instructions and, for [k][n] storage, half the shared-memory
// wavefronts. BNkPairRow and BKnPairRow give the row each lane names; LdMatrixModel says what
// the instruction hands back, so the host can check that the two ways agree.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define GRADSYNC_MMA_FN __host__ __device__ __forceinline__
#else
#define GRADSYNC_MMA_FN inline
#endif

namespace gradsync::kernels::cuda::mma {

using bf16 = __nv_bfloat16;

inline constexpr int kM = 16, kN = 8, kK = 16;

struct FragA {
  uint32_t r[4];
};
struct FragB {
  uint32_t r[2];
};
struct FragC {
  float v[4];
};

GRADSYNC_MMA_FN int Group(int lane) { return lane >> 2; }
GRADSYNC_MMA_FN int Quad(int lane) { return lane & 3; }
// Row and column of element i of a lane's C fragment.
GRADSYNC_MMA_FN int CRow(int lane, int i) { return Group(lane) + 8 * (i >> 1); }
GRADSYNC_MMA_FN int CCol(int lane, int i) { return 2 * Quad(lane) + (i & 1); }

GRADSYNC_MMA_FN uint32_t Bits(bf16 x) {
#ifdef __CUDA_ARCH__
  return __bfloat16_as_ushort(x);
#else
  uint16_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
#endif
}

// lo in the low half, hi in the high half.
GRADSYNC_MMA_FN uint32_t Pack(bf16 lo, bf16 hi) { return Bits(lo) | (Bits(hi) << 16); }

// Rounds to nearest even, as the kernels' other bf16 conversions.
GRADSYNC_MMA_FN uint32_t PackFloats(float lo, float hi) {
#ifdef __CUDA_ARCH__
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
#else
  return Pack(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
#endif
}

// The two bf16 at p and p + 1 (p 4-byte aligned) as one register.
GRADSYNC_MMA_FN uint32_t LoadPair(const bf16* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint32_t*>(p);
#else
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
#endif
}

GRADSYNC_MMA_FN void LoadA(FragA& a, const bf16* m, int ld, int lane) {
  const bf16* p = m + Group(lane) * ld + 2 * Quad(lane);
  a.r[0] = LoadPair(p);
  a.r[1] = LoadPair(p + 8 * ld);
  a.r[2] = LoadPair(p + 8);
  a.r[3] = LoadPair(p + 8 * ld + 8);
}

GRADSYNC_MMA_FN void LoadBNk(FragB& b, const bf16* m, int ld, int lane) {
  const bf16* p = m + Group(lane) * ld + 2 * Quad(lane);
  b.r[0] = LoadPair(p);
  b.r[1] = LoadPair(p + 8);
}

GRADSYNC_MMA_FN void LoadBKn(FragB& b, const bf16* m, int ld, int lane) {
  const bf16* p = m + 2 * Quad(lane) * ld + Group(lane);
  b.r[0] = Pack(p[0], p[ld]);
  b.r[1] = Pack(p[8 * ld], p[9 * ld]);
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16: lane l names row l % 8 of matrix l / 8 (8
// bf16, 16 bytes, 16-byte aligned). Register i of lane l receives matrix i's row Group(l), columns
// 2 Quad(l) and the one after; with .trans its column Group(l), rows 2 Quad(l) and the one after;
// the lower index in the low half.
//
// The row a lane names for the B fragments of k16 chunks c and c + 1 of B stored as [n][k] rows
// (the layout of LoadBNk) at m, chunk c starting at column 0: the four matrices are the 8 rows'
// columns 0-7, 8-15, 16-23 and 24-31, so registers 0-1 are chunk c's fragment, 2-3 chunk c + 1's.
GRADSYNC_MMA_FN const bf16* BNkPairRow(const bf16* m, int ld, int lane) {
  return m + (lane & 7) * ld + 8 * (lane >> 3);
}

// The row a lane names (with .trans) for the B fragments of the n8 tiles at columns 0 and 8 of B
// stored as [k][n] rows (the layout of LoadBKn) at m: the matrices are rows 0-7 and 8-15 of
// columns 0-7, then of columns 8-15, so registers 0-1 are the first tile's fragment, 2-3 the
// second's.
GRADSYNC_MMA_FN const bf16* BKnPairRow(const bf16* m, int ld, int lane) {
  const int matrix = lane >> 3;
  return m + (8 * (matrix & 1) + (lane & 7)) * ld + 8 * (matrix >> 1);
}

// What register i of `lane` receives from ldmatrix .x4 (trans: .x4.trans) when lane l named
// rows[l]: the instruction as the PTX ISA describes it, for the host.
inline uint32_t LdMatrixModel(const bf16* const (&rows)[32], int i, int lane, bool trans) {
  if (!trans) return LoadPair(rows[8 * i + Group(lane)] + 2 * Quad(lane));
  return Pack(rows[8 * i + 2 * Quad(lane)][Group(lane)], rows[8 * i + 2 * Quad(lane) + 1][Group(lane)]);
}

// The A fragment of a 16x16 tile whose columns 0..7 are `lo` and 8..15 `hi`, rounded to bf16.
GRADSYNC_MMA_FN FragA AFromC(const FragC& lo, const FragC& hi) {
  return {{PackFloats(lo.v[0], lo.v[1]), PackFloats(lo.v[2], lo.v[3]), PackFloats(hi.v[0], hi.v[1]),
           PackFloats(hi.v[2], hi.v[3])}};
}

GRADSYNC_MMA_FN void Zero(FragC& c) { c.v[0] = c.v[1] = c.v[2] = c.v[3] = 0.0f; }

}  // namespace gradsync::kernels::cuda::mma
