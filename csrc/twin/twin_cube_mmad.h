// CPU twin, Mmad's arithmetic on the fractal layouts of L0A (Zz), L0B (Zn) and L0C (Nz). Every element
// of C is the twin's defined sum: start (the bias or 0), then + a[i][q] * b[q][j] for q = 0, 1, ... in
// order, each product and sum rounded to fp32 (the build never contracts to FMA), then C = sum or
// C + sum. The loops below only choose which elements advance together: A and B are widened to fp32
// once per call, and a block of rows x columns stays in vector registers across the whole k. Any
// blocking gives the same bits: tests/cpp/test_twin_mmad.cpp holds it to the one-element loop, bit for bit.
//
// Where every product is exact in fp32 a fused multiply-add gives the same bits as the product rounded
// and then added (the rounding of an exact product changes nothing), at twice the rate: fp16 x fp16 always
// (11 + 11 significand bits, products within 2^-48 .. 2^32), bf16 x bf16 when no product can leave
// fp32's normal range (checked on the operands' exponents per call). fp32 operands keep the two roundings.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "twin_types.h"
#if defined(__x86_64__) && (defined(__AVX512F__) || defined(__FMA__))
#include <immintrin.h>
#endif

namespace AscendC {
namespace twin {

// A block of C: kMmadRows rows x kMmadCols columns, its accumulators in named vector registers (x86: eight
// rows of two zmm, sixteen of AVX-512's 32 registers; four rows of two ymm on the AVX2 path, which has 16);
// elsewhere a plain loop over the same block.
#if defined(__x86_64__) && defined(__AVX512F__)
constexpr uint32_t kMmadCols = 32, kMmadRows = 8;
#else
constexpr uint32_t kMmadCols = 16, kMmadRows = 4;
#endif

struct MmadScratch {  // per host thread: Mmad never yields, so a core switch cannot interleave two calls
  std::vector<float> a, b;
};
inline MmadScratch& ThreadMmadScratch() {
  static thread_local MmadScratch s;
  return s;
}

// The exponent field's range over an operand's non-zero elements, kept while bf16 is widened.
struct ExponentRange {
  uint32_t lo = 255, hi = 0;
};

// Every bf16 x bf16 product normal and finite: no subnormal or special operand, and the exponent sums
// within [128, 379] (products within [2^-126, 2^127)).
inline bool Bf16ProductsExact(const ExponentRange& a, const ExponentRange& b) {
  if (a.lo > a.hi || b.lo > b.hi) return true;  // an operand all zeros: every product is +-0, exact
  return a.lo >= 1 && b.lo >= 1 && a.hi <= 254 && b.hi <= 254 && a.lo + b.lo >= 128 && a.hi + b.hi <= 379;
}

// len elements from src to dst, src[i * stride], widened to fp32; bf16 also widens its exponents' range.
template <typename S>
inline void WidenRun(const S* src, uint64_t stride, float* dst, uint32_t len, ExponentRange& range) {
  if constexpr (std::is_same_v<S, bfloat16_t>) {
    static_assert(sizeof(bfloat16_t) == sizeof(uint16_t));
    typedef uint16_t __attribute__((may_alias)) Bits16;
    typedef uint32_t __attribute__((may_alias)) Bits32;
    const Bits16* in = reinterpret_cast<const Bits16*>(src);
    Bits32* out = reinterpret_cast<Bits32*>(dst);
    uint32_t lo = range.lo, hi = range.hi;
    for (uint32_t i = 0; i < len; ++i) {
      const uint32_t u = in[i * stride], e = (u >> 7) & 0xFFu;
      out[i] = u << 16;
      lo = std::min(lo, (u & 0x7FFFu) != 0 ? e : 255u);
      hi = std::max(hi, e);
    }
    range.lo = lo, range.hi = hi;
  } else {
    for (uint32_t i = 0; i < len; ++i) dst[i] = float(src[i * stride]);
  }
}

// A (gemv: k contiguous elements; else Zz, m1 x k1 fractals of 16 x k0) widened to aw [rows][k].
template <typename S>
inline void WidenA(const S* a, float* aw, uint32_t m, uint32_t k, uint32_t k0, uint32_t k1, bool gemv,
                   ExponentRange& range) {
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t q1 = 0; q1 < k1; ++q1) {
      const S* src = gemv ? a + uint64_t(q1) * k0 : a + (uint64_t(i / 16) * k1 + q1) * 16 * k0 + (i % 16) * k0;
      WidenRun(src, 1, aw + uint64_t(i) * k + q1 * k0, std::min(k0, k - q1 * k0), range);
    }
}

// B (Zn: k1 x n1 fractals, each 16 columns of k0 contiguous elements) widened to bw [k][cols].
template <typename U>
inline void WidenB(const U* b, float* bw, uint32_t n, uint32_t k, uint32_t k0, uint32_t n1, uint32_t cols,
                   ExponentRange& range) {
  for (uint32_t q = 0; q < k; ++q)
    for (uint32_t j1 = 0; j1 < n1; ++j1) {
      const U* src = b + (uint64_t(q / k0) * n1 + j1) * 16 * k0 + q % k0;
      WidenRun(src, k0, bw + uint64_t(q) * cols + j1 * 16, std::min(16u, n - j1 * 16), range);
    }
}

// One vector register of fp32 lanes on the build's x86 path (P: the intrinsics' prefix): load, store, broadcast,
// acc + a * b fused or rounded twice.
#define ASCENDC_MMAD_VEC(V, P)                                                              \
  using MmadVec = V;                                                                        \
  inline MmadVec MmadLoad(const float* p) { return P##_loadu_ps(p); }                       \
  inline void MmadStore(float* p, MmadVec v) { P##_storeu_ps(p, v); }                       \
  inline MmadVec MmadSet1(float x) { return P##_set1_ps(x); }                               \
  inline MmadVec MmadFma(MmadVec a, MmadVec b, MmadVec c) { return P##_fmadd_ps(a, b, c); } \
  inline MmadVec MmadMulAdd(MmadVec a, MmadVec b, MmadVec c) { return P##_add_ps(c, P##_mul_ps(a, b)); }
#if defined(__x86_64__) && defined(__AVX512F__)
ASCENDC_MMAD_VEC(__m512, _mm512)
#elif defined(__x86_64__) && defined(__FMA__)
ASCENDC_MMAD_VEC(__m256, _mm256)
#endif
#undef ASCENDC_MMAD_VEC

// io [kMmadRows][kMmadCols] += the block's sums over q < k: A rows at arow (pitch k), B columns at bcol (pitch cols).
// kExact: every product is exact, so a fused multiply-add rounds as the product-then-sum does. On x86 the
// accumulators (kMmadRows rows x 2 registers) are named variables, so they stay in registers across k.
#if defined(__x86_64__) && (defined(__AVX512F__) || defined(__FMA__))
template <bool kExact>
inline void MmadKernel(const float* arow, const float* bcol, uint32_t k, uint32_t cols, float* io) {
  constexpr uint32_t kLanes = sizeof(MmadVec) / sizeof(float);
  static_assert(kMmadCols == 2 * kLanes && (kMmadRows == 4 || kMmadRows == 8), "the block is 4 or 8 rows of 2");
  MmadVec c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;
  const auto load = [io](uint32_t r, MmadVec& x0, MmadVec& x1) {
    x0 = MmadLoad(io + r * kMmadCols), x1 = MmadLoad(io + r * kMmadCols + kLanes);
  };
  const auto store = [io](uint32_t r, MmadVec x0, MmadVec x1) {
    MmadStore(io + r * kMmadCols, x0), MmadStore(io + r * kMmadCols + kLanes, x1);
  };
  load(0, c00, c01), load(1, c10, c11), load(2, c20, c21), load(3, c30, c31);
  if constexpr (kMmadRows == 8) load(4, c40, c41), load(5, c50, c51), load(6, c60, c61), load(7, c70, c71);
  for (uint32_t q = 0; q < k; ++q) {
    const MmadVec b0 = MmadLoad(bcol + uint64_t(q) * cols), b1 = MmadLoad(bcol + uint64_t(q) * cols + kLanes);
    const auto row = [&](uint32_t r, MmadVec& x0, MmadVec& x1) {
      const MmadVec a = MmadSet1(arow[uint64_t(r) * k + q]);
      x0 = kExact ? MmadFma(a, b0, x0) : MmadMulAdd(a, b0, x0);
      x1 = kExact ? MmadFma(a, b1, x1) : MmadMulAdd(a, b1, x1);
    };
    row(0, c00, c01), row(1, c10, c11), row(2, c20, c21), row(3, c30, c31);
    if constexpr (kMmadRows == 8) row(4, c40, c41), row(5, c50, c51), row(6, c60, c61), row(7, c70, c71);
  }
  store(0, c00, c01), store(1, c10, c11), store(2, c20, c21), store(3, c30, c31);
  if constexpr (kMmadRows == 8) store(4, c40, c41), store(5, c50, c51), store(6, c60, c61), store(7, c70, c71);
}
#else
template <bool kExact>
inline void MmadKernel(const float* arow, const float* bcol, uint32_t k, uint32_t cols, float* io) {
  for (uint32_t q = 0; q < k; ++q)
    for (uint32_t r = 0; r < kMmadRows; ++r)
      for (uint32_t j = 0; j < kMmadCols; ++j) {
        const float prod = arow[uint64_t(r) * k + q] * bcol[uint64_t(q) * cols + j];
        io[r * kMmadCols + j] = io[r * kMmadCols + j] + prod;
      }
}
#endif

// C rows [i0, i0 + kMmadRows) x columns [j0, j0 + kMmadCols) from the widened A [rows][k] and B [k][cols].
template <bool kExact>
inline void MmadBlock(const float* aw, const float* bw, uint32_t k, uint32_t cols, uint32_t i0, uint32_t j0,
                      const float* bias, uint32_t n, float (&out)[kMmadRows][kMmadCols]) {
  for (uint32_t r = 0; r < kMmadRows; ++r)
    for (uint32_t j = 0; j < kMmadCols; ++j) out[r][j] = bias != nullptr && j0 + j < n ? bias[j0 + j] : 0.0f;
  MmadKernel<kExact>(aw + uint64_t(i0) * k, bw + j0, k, cols, &out[0][0]);
}

// A (gemv: k contiguous elements; else Zz, m1 x k1 fractals of 16 x k0) widened to aw [rows][k].

// C (Nz, m1 x n1 fractals of 16 x 16 fp32) from A (gemv: k contiguous elements; else Zz with k1
// fractal columns of k0) and B (Zn, n1 fractal columns). init: C = sum; else C += sum.
template <typename S, typename U>
inline void MmadFractal(const S* a, const U* b, float* c, const float* bias, uint32_t m, uint32_t n, uint32_t k,
                        uint32_t k0, uint32_t k1, uint32_t m1, uint32_t n1, bool gemv, bool init) {
  MmadScratch& s = ThreadMmadScratch();
  const uint32_t rows = (m + kMmadRows - 1) / kMmadRows * kMmadRows;
  const uint32_t cols = (n + kMmadCols - 1) / kMmadCols * kMmadCols;
  if (s.a.size() < uint64_t(rows) * k) s.a.resize(uint64_t(rows) * k);
  if (s.b.size() < uint64_t(k) * cols) s.b.resize(uint64_t(k) * cols);
  float* aw = s.a.data();  // [rows][k]: padding rows 0
  float* bw = s.b.data();  // [k][cols]: padding columns 0
  std::fill(aw + uint64_t(m) * k, aw + uint64_t(rows) * k, 0.0f);
  if (cols > n)
    for (uint32_t q = 0; q < k; ++q) std::fill(bw + uint64_t(q) * cols + n, bw + uint64_t(q + 1) * cols, 0.0f);
  ExponentRange ea, eb;
  WidenA(a, aw, m, k, k0, k1, gemv, ea);
  WidenB(b, bw, n, k, k0, n1, cols, eb);
  bool exact = std::is_same_v<S, half> && std::is_same_v<U, half>;
  if constexpr (std::is_same_v<S, bfloat16_t> && std::is_same_v<U, bfloat16_t>) exact = Bf16ProductsExact(ea, eb);
  float acc[kMmadRows][kMmadCols];
  for (uint32_t j0 = 0; j0 < n; j0 += kMmadCols) {  // B's panel of columns stays in L1 while A's rows pass
    for (uint32_t i0 = 0; i0 < m; i0 += kMmadRows) {
      if (exact) MmadBlock<true>(aw, bw, k, cols, i0, j0, bias, n, acc);
      else MmadBlock<false>(aw, bw, k, cols, i0, j0, bias, n, acc);
      const uint32_t rEnd = std::min(kMmadRows, m - i0), jEnd = std::min(kMmadCols, n - j0);
      for (uint32_t r = 0; r < rEnd; ++r) {
        const uint32_t i = i0 + r;
        for (uint32_t f = 0; f * 16 < jEnd; ++f) {  // one fractal row of 16 columns at a time
          float* out = c + (uint64_t(j0 / 16 + f) * m1 + i / 16) * 256 + (i % 16) * 16;
          const float* sum = acc[r] + f * 16;
          const uint32_t len = std::min(16u, jEnd - f * 16);
          for (uint32_t jj = 0; jj < len; ++jj) out[jj] = init ? sum[jj] : out[jj] + sum[jj];
        }
      }
    }
  }
}

}  // namespace twin
}  // namespace AscendC
