// CPU twin, cube arithmetic: C = op(A) @ op(B) with fp32 accumulation, C rounded once to its dtype,
// as the cube unit computes in L0C and the FIXPIPE converts on the way out. The twin stays free of
// any framework: a host (the torch bindings) may hand it a tuned GEMM through SetGemmProvider;
// without one a plain cache-blocked loop runs.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "twin_types.h"

namespace AscendC {
namespace twin {

enum class CubeDtype : uint8_t { kFloat32, kFloat16, kBFloat16 };

template <typename T>
constexpr CubeDtype CubeDtypeOf() {
  if constexpr (std::is_same_v<T, float>) return CubeDtype::kFloat32;
  else if constexpr (std::is_same_v<T, half>) return CubeDtype::kFloat16;
  else return CubeDtype::kBFloat16;
}

// One row-major GEMM. A is [m, k] with row pitch lda, or with transA stored as [k, m] (pitch lda);
// B is [k, n] (pitch ldb), or with transB stored as [n, k]; C is [m, n] with pitch ldc. With a bias
// ([n], every row's), the fp32 accumulator starts from it, as L0C starts from the bias table.
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  CubeDtype inDtype = CubeDtype::kFloat32;   // A and B
  CubeDtype outDtype = CubeDtype::kFloat32;  // C
  const void* a = nullptr;
  int64_t lda = 0;
  bool transA = false;
  const void* b = nullptr;
  int64_t ldb = 0;
  bool transB = false;
  void* c = nullptr;
  int64_t ldc = 0;
  const void* bias = nullptr;  // nullptr: the accumulator starts at 0
  CubeDtype biasDtype = CubeDtype::kFloat32;
};

using GemmProvider = void (*)(const GemmCall&);
inline GemmProvider& GemmProviderSlot() {
  static GemmProvider provider = nullptr;
  return provider;
}
// The host's GEMM; nullptr restores the built-in loop. It must honour fp32 accumulation.
inline void SetGemmProvider(GemmProvider provider) { GemmProviderSlot() = provider; }

inline float CubeLoad(const void* p, CubeDtype t, int64_t i) {
  if (t == CubeDtype::kFloat32) return static_cast<const float*>(p)[i];
  if (t == CubeDtype::kFloat16) return static_cast<float>(static_cast<const half*>(p)[i]);
  return static_cast<float>(static_cast<const bfloat16_t*>(p)[i]);
}

inline void CubeStore(void* p, CubeDtype t, int64_t i, float v) {
  if (t == CubeDtype::kFloat32) static_cast<float*>(p)[i] = v;
  else if (t == CubeDtype::kFloat16) static_cast<half*>(p)[i] = static_cast<half>(v);
  else static_cast<bfloat16_t*>(p)[i] = bfloat16_t(v);
}

// The built-in GEMM: panels of A and B widened to fp32, an fp32 accumulator block, one rounding.
inline void BlockedGemm(const GemmCall& g) {
  constexpr int64_t kBm = 64, kBn = 256, kBk = 256;
  std::vector<float> pa(kBm * kBk), pb(kBk * kBn), acc(kBm * kBn);
  for (int64_t i0 = 0; i0 < g.m; i0 += kBm) {
    const int64_t bm = std::min(kBm, g.m - i0);
    for (int64_t j0 = 0; j0 < g.n; j0 += kBn) {
      const int64_t bn = std::min(kBn, g.n - j0);
      for (int64_t i = 0; i < bm; ++i)
        for (int64_t j = 0; j < bn; ++j) acc[i * kBn + j] = g.bias ? CubeLoad(g.bias, g.biasDtype, j0 + j) : 0.0f;
      for (int64_t p0 = 0; p0 < g.k; p0 += kBk) {
        const int64_t bk = std::min(kBk, g.k - p0);
        for (int64_t i = 0; i < bm; ++i)
          for (int64_t p = 0; p < bk; ++p)
            pa[i * kBk + p] =
                CubeLoad(g.a, g.inDtype, g.transA ? (p0 + p) * g.lda + i0 + i : (i0 + i) * g.lda + p0 + p);
        for (int64_t p = 0; p < bk; ++p)
          for (int64_t j = 0; j < bn; ++j)
            pb[p * kBn + j] =
                CubeLoad(g.b, g.inDtype, g.transB ? (j0 + j) * g.ldb + p0 + p : (p0 + p) * g.ldb + j0 + j);
        for (int64_t i = 0; i < bm; ++i) {
          float* row = &acc[i * kBn];
          for (int64_t p = 0; p < bk; ++p) {
            const float av = pa[i * kBk + p];
            const float* brow = &pb[p * kBn];
            for (int64_t j = 0; j < bn; ++j) row[j] += av * brow[j];
          }
        }
      }
      for (int64_t i = 0; i < bm; ++i)
        for (int64_t j = 0; j < bn; ++j) CubeStore(g.c, g.outDtype, (i0 + i) * g.ldc + j0 + j, acc[i * kBn + j]);
    }
  }
}

inline void RunGemm(const GemmCall& g) {
  if (g.m <= 0 || g.n <= 0) return;
  if (g.k <= 0) {  // an empty reduction: C = the bias, or 0
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j)
        CubeStore(g.c, g.outDtype, i * g.ldc + j, g.bias ? CubeLoad(g.bias, g.biasDtype, j) : 0.0f);
    return;
  }
  if (GemmProvider p = GemmProviderSlot()) p(g);
  else BlockedGemm(g);
}

}  // namespace twin
}  // namespace AscendC
