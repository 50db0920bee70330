// CPU twin, Mmad's arithmetic on the fractal layouts of L0A (Zz), L0B (Zn) and L0C (Nz). Every element
// of C is the twin's defined sum: start (the bias or 0), then + a[i][q] * b[q][j] for q = 0, 1, ... in
// order, each product and sum rounded to fp32 (the build never contracts to FMA), then C = sum or
// C + sum. The loops below only choose which elements advance together: A and B are widened to fp32
// once per call, and a block of rows x columns stays in registers across the whole k, so the compiler
// vectorises over columns. Any blocking gives the same bits: tests/cpp/test_twin_mmad.cpp holds it
// to the one-element loop, bit for bit.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace AscendC {
namespace twin {

// Columns that advance together: four vector registers' worth on the build's ISA path.
#if defined(__AVX512F__)
constexpr uint32_t kMmadCols = 64;
#else
constexpr uint32_t kMmadCols = 32;
#endif
constexpr uint32_t kMmadRows = 4;

struct MmadScratch {  // per host thread: Mmad never yields, so a core switch cannot interleave two calls
  std::vector<float> a, b;
};
inline MmadScratch& ThreadMmadScratch() {
  static thread_local MmadScratch s;
  return s;
}

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
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t q = 0; q < k; ++q)
      aw[uint64_t(i) * k + q] =
          float(gemv ? a[q] : a[(uint64_t(i / 16) * k1 + q / k0) * 16 * k0 + (i % 16) * k0 + q % k0]);
  for (uint32_t q = 0; q < k; ++q)
    for (uint32_t j = 0; j < n; ++j)
      bw[uint64_t(q) * cols + j] = float(b[(uint64_t(q / k0) * n1 + j / 16) * 16 * k0 + (j % 16) * k0 + q % k0]);
  for (uint32_t i0 = 0; i0 < m; i0 += kMmadRows) {
    for (uint32_t j0 = 0; j0 < n; j0 += kMmadCols) {
      float acc[kMmadRows][kMmadCols];
      for (uint32_t r = 0; r < kMmadRows; ++r)
        for (uint32_t j = 0; j < kMmadCols; ++j) acc[r][j] = bias != nullptr && j0 + j < n ? bias[j0 + j] : 0.0f;
      const float* arow = aw + uint64_t(i0) * k;
      for (uint32_t q = 0; q < k; ++q) {
        const float* brow = bw + uint64_t(q) * cols + j0;
        for (uint32_t r = 0; r < kMmadRows; ++r) {
          const float av = arow[uint64_t(r) * k + q];
          for (uint32_t j = 0; j < kMmadCols; ++j) acc[r][j] += av * brow[j];
        }
      }
      const uint32_t rEnd = std::min(kMmadRows, m - i0), jEnd = std::min(kMmadCols, n - j0);
      for (uint32_t r = 0; r < rEnd; ++r) {
        const uint32_t i = i0 + r;
        for (uint32_t jj = 0; jj < jEnd; ++jj) {
          const uint32_t j = j0 + jj;
          float& out = c[(uint64_t(j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16];
          out = init ? acc[r][jj] : out + acc[r][jj];
        }
      }
    }
  }
}

}  // namespace twin
}  // namespace AscendC
