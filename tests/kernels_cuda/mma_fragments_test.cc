// The tensor-core fragment loaders of kernels/cuda/src/mma_fragments.h, on the host: a warp's
// fragments are loaded lane by lane, multiplied by an emulation of mma.sync.m16n8k16 written from
// the PTX ISA's fragment tables (independently of the header), and the products compared with
// plain matrix products. Needs no GPU, so these run everywhere; they pin down the layouts the
// attention kernels rely on (q k^T from row-major keys, P v with P from the accumulators, and
// the ldmatrix loads against the lane-by-lane ones).
#include "mma_fragments.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

namespace gradsync::kernels::cuda::mma {
namespace {

constexpr int kLanes = 32;

float ToF(bf16 x) { return __bfloat162float(x); }
float Half(uint32_t reg, int half) {
  const uint16_t bits = static_cast<uint16_t>(half == 0 ? reg & 0xffffu : reg >> 16);
  bf16 x;
  std::memcpy(static_cast<void*>(&x), &bits, sizeof(x));
  return ToF(x);
}

// The PTX ISA's tables for .bf16 m16n8k16: element e of a lane sits in register e / 2, the even
// one in the low half.
struct Coord {
  int row, col;
};
Coord PtxA(int lane, int e) {
  const int group = lane >> 2, tig = lane % 4;
  const int row = (e == 0 || e == 1 || e == 4 || e == 5) ? group : group + 8;
  const int col = e < 4 ? tig * 2 + (e & 1) : tig * 2 + 8 + (e & 1);
  return {row, col};
}
Coord PtxB(int lane, int e) {
  const int group = lane >> 2, tig = lane % 4;
  return {e < 2 ? tig * 2 + (e & 1) : tig * 2 + 8 + (e & 1), group};
}
Coord PtxC(int lane, int e) {
  const int group = lane >> 2, tig = lane % 4;
  return {e < 2 ? group : group + 8, tig * 2 + (e & 1)};
}

using WarpA = std::array<FragA, kLanes>;
using WarpB = std::array<FragB, kLanes>;
using WarpC = std::array<FragC, kLanes>;

// d += a b over the whole warp, per the tables above.
void EmulatedMma(WarpC& d, const WarpA& a, const WarpB& b) {
  float A[16][16], B[16][8];
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int e = 0; e < 8; ++e) {
      const Coord c = PtxA(lane, e);
      A[c.row][c.col] = Half(a[lane].r[e / 2], e % 2);
    }
    for (int e = 0; e < 4; ++e) {
      const Coord c = PtxB(lane, e);
      B[c.row][c.col] = Half(b[lane].r[e / 2], e % 2);
    }
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int e = 0; e < 4; ++e) {
      const Coord c = PtxC(lane, e);
      float sum = 0.0f;
      for (int k = 0; k < 16; ++k) sum += A[c.row][k] * B[k][c.col];
      d[lane].v[e] += sum;
    }
  }
}

// A [rows][cols] bf16 matrix with a padded row pitch, as the kernels keep tiles.
struct Tile {
  int rows, cols, ld;
  std::vector<bf16> data;
  Tile(int r, int c, uint32_t seed) : rows(r), cols(c), ld(c + 8), data(static_cast<size_t>(r) * (c + 8)) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (bf16& x : data) x = __float2bfloat16_rn(dist(rng));
  }
  float at(int r, int c) const { return ToF(data[static_cast<size_t>(r) * ld + c]); }
  const bf16* ptr(int r, int c) const { return data.data() + static_cast<size_t>(r) * ld + c; }
};

TEST(MmaFragmentsTest, CoordinatesMatchThePtxTables) {
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(CRow(lane, i), PtxC(lane, i).row) << "lane " << lane << " element " << i;
      EXPECT_EQ(CCol(lane, i), PtxC(lane, i).col) << "lane " << lane << " element " << i;
    }
  }
}

// The forward kernel's first product: S[16, 64] = Q[16, D] K[64, D]^T, keys in 8-row slices,
// head dims in 16-column chunks, keys row-major (LoadBNk).
TEST(MmaFragmentsTest, QueryKeyProductFromRowMajorKeys) {
  constexpr int D = 64, kKeys = 64;
  const Tile q(16, D, 1), k(kKeys, D, 2);
  std::vector<WarpC> s(kKeys / 8);
  for (auto& w : s)
    for (FragC& c : w) Zero(c);
  for (int c = 0; c < D / 16; ++c) {
    WarpA a;
    for (int lane = 0; lane < kLanes; ++lane) LoadA(a[lane], q.ptr(0, 16 * c), q.ld, lane);
    for (int j = 0; j < kKeys / 8; ++j) {
      WarpB b;
      for (int lane = 0; lane < kLanes; ++lane) LoadBNk(b[lane], k.ptr(8 * j, 16 * c), k.ld, lane);
      EmulatedMma(s[j], a, b);
    }
  }
  for (int j = 0; j < kKeys / 8; ++j) {
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const int row = CRow(lane, i), key = 8 * j + CCol(lane, i);
        double want = 0;
        for (int d = 0; d < D; ++d) want += static_cast<double>(q.at(row, d)) * k.at(key, d);
        ASSERT_NEAR(s[j][lane].v[i], want, 1e-4) << "row " << row << " key " << key;
      }
    }
  }
}

// The second product: O[16, D] = P[16, 64] V[64, D], P's A fragments made from the C fragments
// of the first (AFromC, rounding to bf16), values row-major (LoadBKn).
TEST(MmaFragmentsTest, ProbabilityValueProductFromAccumulators) {
  constexpr int D = 32, kKeys = 64;
  const Tile v(kKeys, D, 3);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  float p[16][kKeys];
  std::vector<WarpC> s(kKeys / 8);
  for (int j = 0; j < kKeys / 8; ++j) {
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const float x = dist(rng);
        s[j][lane].v[i] = x;
        p[CRow(lane, i)][8 * j + CCol(lane, i)] = ToF(__float2bfloat16_rn(x));
      }
    }
  }
  std::vector<WarpC> o(D / 8);
  for (auto& w : o)
    for (FragC& c : w) Zero(c);
  for (int kc = 0; kc < kKeys / 16; ++kc) {
    WarpA a;
    for (int lane = 0; lane < kLanes; ++lane) a[lane] = AFromC(s[2 * kc][lane], s[2 * kc + 1][lane]);
    for (int c = 0; c < D / 8; ++c) {
      WarpB b;
      for (int lane = 0; lane < kLanes; ++lane) LoadBKn(b[lane], v.ptr(16 * kc, 8 * c), v.ld, lane);
      EmulatedMma(o[c], a, b);
    }
  }
  for (int c = 0; c < D / 8; ++c) {
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const int row = CRow(lane, i), col = 8 * c + CCol(lane, i);
        double want = 0;
        for (int key = 0; key < kKeys; ++key) want += static_cast<double>(p[row][key]) * v.at(key, col);
        ASSERT_NEAR(o[c][lane].v[i], want, 1e-4) << "row " << row << " col " << col;
      }
    }
  }
}

// What ldmatrix (.x4, or .x4.trans) hands each lane when every lane names Row(m, ld, lane),
// against two lane-by-lane loads Load at m and at m + second.
template <typename RowFn, typename LoadFn>
void ExpectLdMatrixPair(const Tile& t, const bf16* m, RowFn row_of, LoadFn load, int second, bool trans) {
  const bf16* rows[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) rows[lane] = row_of(m, t.ld, lane);
  for (int lane = 0; lane < kLanes; ++lane) {
    FragB b0, b1;
    load(b0, m, t.ld, lane);
    load(b1, m + second, t.ld, lane);
    const uint32_t want[4] = {b0.r[0], b0.r[1], b1.r[0], b1.r[1]};
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(LdMatrixModel(rows, i, lane, trans), want[i]) << "lane " << lane << " register " << i;
    }
  }
}

// The ldmatrix loads of the kernels' inner loops (LoadBNkPair, LoadBKnPair): the rows each lane
// names (BNkPairRow, BKnPairRow) through the instruction's model hand every lane the registers
// of two LoadBNk / LoadBKn, at every offset the kernels use.
TEST(MmaFragmentsTest, LdMatrixPairsMatchTheLaneLoaders) {
  const Tile keys(64, 64, 6);  // [n][k]: 8-row slices, k16 chunks in pairs
  for (int j = 0; j < 8; ++j) {
    for (int c = 0; c < 4; c += 2) {
      SCOPED_TRACE(::testing::Message() << "keys: slice " << j << " chunk " << c);
      ExpectLdMatrixPair(keys, keys.ptr(8 * j, 16 * c), BNkPairRow, LoadBNk, 16, false);
    }
  }
  const Tile values(64, 64, 7);  // [k][n]: k16 chunks, n8 tiles in pairs
  for (int kc = 0; kc < 4; ++kc) {
    for (int c = 0; c < 8; c += 2) {
      SCOPED_TRACE(::testing::Message() << "values: chunk " << kc << " tile " << c);
      ExpectLdMatrixPair(values, values.ptr(16 * kc, 8 * c), BKnPairRow, LoadBKn, 8, true);
    }
  }
}

TEST(MmaFragmentsTest, PackPutsTheFirstValueInTheLowHalf) {
  const uint32_t r = PackFloats(1.0f, -2.0f);
  EXPECT_EQ(Half(r, 0), 1.0f);
  EXPECT_EQ(Half(r, 1), -2.0f);
  const Tile t(1, 16, 5);
  EXPECT_EQ(Half(LoadPair(t.ptr(0, 6)), 0), t.at(0, 6));
  EXPECT_EQ(Half(LoadPair(t.ptr(0, 6)), 1), t.at(0, 7));
}

}  // namespace
}  // namespace gradsync::kernels::cuda::mma
