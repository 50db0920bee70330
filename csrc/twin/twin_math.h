// CPU twin, elementwise maths the vector unit does in one instruction. libm's expf is a call per
// element; this one is branch-free so the compiler vectorises the loops around it.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace AscendC {
namespace twin {

inline float Pow2(int32_t n) {  // 2^n for n in the normal exponent range [-126, 127]
  const uint32_t bits = uint32_t(n + 127) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// exp(x) within 2 ulp over the whole float range: x = n*ln2 + r, |r| <= ln2/2, a degree-6
// polynomial for e^r (Cephes' coefficients), and 2^n applied in two halves so results near
// the overflow and subnormal ends round right (x >= 89 overflows to inf, x <= -104 gives 0).
// Branch-free (min/max and selects only) so loops over it vectorise; NaN propagates.
// The reduction and each Horner step round once (std::fma): fused by this definition, not by
// the compiler (-ffp-contract=off), so every ISA path gives the same bits.
inline float ExpF(float x) {
  const float xc = std::min(std::max(x, -104.0f), 89.0f);  // max(NaN, lo) and min(NaN, hi) keep NaN
  const float n = __builtin_rintf(xc * 1.44269504088896341f);
  const float r = std::fma(-n, -2.12194440e-4f, std::fma(-n, 0.693359375f, xc));
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p * r, r, r) + 1.0f;
  const int32_t ni = int32_t(std::max(-150.0f, n)), half = ni / 2;  // NaN -> -150: p is NaN anyway
  return p * Pow2(half) * Pow2(ni - half);
}

}  // namespace twin
}  // namespace AscendC
