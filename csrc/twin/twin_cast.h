// CPU twin, Cast: the dtype pairs and rounding modes the A2 vector unit supports.
// bfloat16 <-> half has no direct path; float -> bfloat16 must name a rounding mode.
#pragma once
#include <cmath>
#include <cstring>
#include <string>
#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "twin_fuse.h"
#include "twin_tensor.h"

namespace AscendC {
namespace twin {

inline const char* RoundName(RoundMode m) {
  static const char* names[] = {"CAST_NONE",  "CAST_RINT",  "CAST_FLOOR", "CAST_CEIL",
                                "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"};
  return names[static_cast<int>(m)];
}

// 16-bit float formats as bit patterns, for the directed rounding modes.
inline uint16_t Bits(half v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}
inline uint16_t Bits(bfloat16_t v) { return v.bits; }
template <typename F>
inline F FromBits(uint16_t b) {
  F v;
  if constexpr (std::is_same_v<F, bfloat16_t>) v.bits = b;
  else std::memcpy(&v, &b, 2);
  return v;
}
template <typename F>
inline F StepUp(F v) {  // next representable value toward +inf
  uint16_t b = Bits(v);
  if ((b & 0x7fff) == 0) return FromBits<F>(1);
  return FromBits<F>(b & 0x8000 ? b - 1 : b + 1);
}
template <typename F>
inline F StepDown(F v) {
  uint16_t b = Bits(v);
  if ((b & 0x7fff) == 0) return FromBits<F>(0x8001);
  return FromBits<F>(b & 0x8000 ? b + 1 : b - 1);
}

// Rounds float x to the 16-bit format F; `nearest` is the round-to-nearest-even result.
template <typename F>
inline F Directed(float x, F nearest, RoundMode mode) {
  const float back = float(nearest);
  if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE || back == x || std::isnan(x)) return nearest;
  const F lo = back < x ? nearest : StepDown(nearest);
  const F hi = back < x ? StepUp(nearest) : nearest;
  switch (mode) {
    case RoundMode::CAST_FLOOR: return lo;
    case RoundMode::CAST_CEIL: return hi;
    case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
    case RoundMode::CAST_ODD: return (Bits(lo) & 1) ? lo : hi;
    case RoundMode::CAST_ROUND: {  // nearest, ties away from zero
      const double dlo = double(x) - double(float(lo)), dhi = double(float(hi)) - double(x);
      if (dlo == dhi) return x > 0 ? hi : lo;
      return dlo < dhi ? lo : hi;
    }
    default: return nearest;
  }
}

inline void FloatToHalf(half* d, const float* s, uint32_t n, RoundMode mode) {
  uint32_t i = 0;
#if defined(__F16C__)
  if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) d[i] = Directed<half>(s[i], half(s[i]), mode);
}

inline void HalfToFloat(float* d, const half* s, uint32_t n) {
  uint32_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
#endif
  for (; i < n; ++i) d[i] = float(s[i]);
}

// Round-to-nearest-even to bfloat16, NaN kept quiet: integer-only, so the compiler vectorises it.
inline uint16_t Bf16Rint(uint32_t v) {
  const bool nan = (v & 0x7fffffffu) > 0x7f800000u;
  return nan ? uint16_t((v >> 16) | 0x40u) : uint16_t((v + 0x7fffu + ((v >> 16) & 1u)) >> 16);
}

#if defined(__AVX512F__) && defined(__GNUC__)
// vcvtneps2bf16 gives Bf16Rint's bits for every input but subnormals, which it flushes to zero (checked over all
// 2^32 floats): a block of 16 holding a subnormal takes Bf16Rint. Compiled for AVX512_BF16 alone and called only
// where the CPU has it, so one AVX-512 library serves CPUs with and without it. Returns the elements done.
__attribute__((target("avx512bf16"))) inline uint32_t FloatToBf16RintWide(uint16_t* out, const uint32_t* u,
                                                                          uint32_t n) {
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
  const __m512i subnormalBelow = _mm512_set1_epi32(0x7fffff);  // |v| - 1 < 0x7fffff: a subnormal
  uint32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = _mm512_loadu_si512(u + i);
    const __m512i m = _mm512_sub_epi32(_mm512_and_si512(v, magnitude), one);
    if (_mm512_cmplt_epu32_mask(m, subnormalBelow)) {
      for (uint32_t k = i; k < i + 16; ++k) out[k] = Bf16Rint(u[k]);
    } else {
      const __m256bh b = _mm512_cvtneps_pbh(_mm512_castsi512_ps(v));
      std::memcpy(out + i, &b, 32);
    }
  }
  return i;
}

inline bool CpuHasAvx512Bf16() {
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
}
#endif

inline void FloatToBf16(bfloat16_t* d, const float* s, uint32_t n, RoundMode mode) {
  if (mode == RoundMode::CAST_RINT) {
    const uint32_t* u = reinterpret_cast<const uint32_t*>(s);
    uint16_t* out = reinterpret_cast<uint16_t*>(d);
    uint32_t i = 0;
#if defined(__AVX512F__) && defined(__GNUC__)
    if (CpuHasAvx512Bf16()) i = FloatToBf16RintWide(out, u, n);
#endif
    for (; i < n; ++i) out[i] = Bf16Rint(u[i]);
    return;
  }
  for (uint32_t i = 0; i < n; ++i) d[i] = Directed<bfloat16_t>(s[i], bfloat16_t(s[i]), mode);
}

inline void Bf16ToFloat(float* d, const bfloat16_t* s, uint32_t n) {
  const uint16_t* in = reinterpret_cast<const uint16_t*>(s);
  uint32_t* out = reinterpret_cast<uint32_t*>(d);
  for (uint32_t i = 0; i < n; ++i) out[i] = uint32_t(in[i]) << 16;
}

inline int32_t FloatToInt(float x, RoundMode mode) {
  if (std::isnan(x)) return 0;
  double r;
  switch (mode) {
    case RoundMode::CAST_FLOOR: r = std::floor(x); break;
    case RoundMode::CAST_CEIL: r = std::ceil(x); break;
    case RoundMode::CAST_ROUND: r = std::round(x); break;
    case RoundMode::CAST_TRUNC: r = std::trunc(x); break;
    default: r = std::nearbyint(x);
  }
  if (r >= 2147483647.0) return 2147483647;  // the device saturates
  if (r <= -2147483648.0) return -2147483647 - 1;
  return int32_t(r);
}

// int32 -> float in a rounding mode: |v| < 2^31 is exact in double, so the two floats around it and
// their distances to it are exact; ties (ROUND) go away from zero.
inline float IntToFloat(int32_t v, RoundMode mode) {
  const float nearest = float(v);  // round-to-nearest-even
  const double x = double(v);
  if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE || double(nearest) == x) return nearest;
  const float lo = double(nearest) < x ? nearest : std::nextafter(nearest, -HUGE_VALF);
  const float hi = double(nearest) < x ? std::nextafter(nearest, HUGE_VALF) : nearest;
  switch (mode) {
    case RoundMode::CAST_FLOOR: return lo;
    case RoundMode::CAST_CEIL: return hi;
    case RoundMode::CAST_TRUNC: return v > 0 ? lo : hi;
    case RoundMode::CAST_ROUND: {
      const double dlo = x - double(lo), dhi = double(hi) - x;
      if (dlo == dhi) return v > 0 ? hi : lo;
      return dlo < dhi ? lo : hi;
    }
    default: return nearest;
  }
}

[[noreturn]] inline void UnsupportedCast(const char* from, const char* to, RoundMode mode, const char* why) {
  Violation("dtype support", std::string("Cast ") + from + " -> " + to + " with " + RoundName(mode) + ": " + why);
}

// Pairs Cast.md's A2 table has beyond the six the twin implements (int4b_t aside): refused as well,
// but named as the twin's gap, not A2's.
template <typename T, typename U>
constexpr bool A2HasOtherCast() {
  constexpr auto is = [](auto a, auto b) { return std::is_same_v<U, decltype(a)> && std::is_same_v<T, decltype(b)>; };
  return is(int16_t(), half()) || is(int16_t(), float()) || is(half(), int16_t()) || is(half(), int32_t()) ||
         is(half(), int8_t()) || is(half(), uint8_t()) || is(int8_t(), half()) || is(bfloat16_t(), int32_t()) ||
         is(int32_t(), int16_t()) || is(int32_t(), half()) || is(int32_t(), int64_t()) || is(float(), int16_t()) ||
         is(float(), float()) || is(float(), int64_t()) || is(int64_t(), int32_t()) || is(int64_t(), float());
}

// The modes Cast.md's A2 table lists for a pair beyond RINT/FLOOR/CEIL/ROUND/TRUNC: NONE, ODD.
inline void RequireMode(const char* from, const char* to, RoundMode mode, bool none, bool odd) {
  if (mode == RoundMode::CAST_NONE && !none)
    UnsupportedCast(from, to, mode, "this conversion loses precision and needs a rounding mode such as CAST_RINT");
  if (mode == RoundMode::CAST_ODD && !odd) UnsupportedCast(from, to, mode, "A2 rounds to odd only on float -> half");
}

}  // namespace twin

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint32_t count) {
  const char* api = "Cast";
  twin::RequireOperand(dst, count, api);
  twin::RequireOperand(src, count, api);
  twin::RequireOverlapRule(api, dst, src, count);
  if (twin::Recording())
    twin::RecordVector(api, twin::DtypeName<T>(), count, std::max(sizeof(T), sizeof(U)),
                       dst.TwinWrite(count, twin::Init::kElementwise), {src.TwinRead(count)});
  const char* to = twin::DtypeName<T>();
  const char* from = twin::DtypeName<U>();
  T* d = dst.TwinPtr();
  const U* s = src.TwinPtr();
  const bool none = roundMode == RoundMode::CAST_NONE;
  const RoundMode mode = roundMode;
  // The dtype pair and mode are checked now; the conversion runs with the block's fused run.
  if constexpr (std::is_same_v<U, float> && std::is_same_v<T, half>) {
    twin::FuseRange(d, s, count, [mode](half* o, const float* i, uint32_t n) { twin::FloatToHalf(o, i, n, mode); });
  } else if constexpr (std::is_same_v<U, half> && std::is_same_v<T, float>) {
    if (!none) twin::UnsupportedCast(from, to, roundMode, "widening casts take CAST_NONE");
    twin::FuseRange(d, s, count, [](float* o, const half* i, uint32_t n) { twin::HalfToFloat(o, i, n); });
  } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>) {
    twin::RequireMode(from, to, roundMode, false, false);
    twin::FuseRange(d, s, count,
                    [mode](bfloat16_t* o, const float* i, uint32_t n) { twin::FloatToBf16(o, i, n, mode); });
  } else if constexpr (std::is_same_v<U, bfloat16_t> && std::is_same_v<T, float>) {
    if (!none) twin::UnsupportedCast(from, to, roundMode, "widening casts take CAST_NONE");
    twin::FuseRange(d, s, count, [](float* o, const bfloat16_t* i, uint32_t n) { twin::Bf16ToFloat(o, i, n); });
  } else if constexpr (std::is_same_v<U, float> && std::is_same_v<T, int32_t>) {
    twin::RequireMode(from, to, roundMode, false, false);
    twin::FuseUnary(d, s, count, [mode](float v) { return twin::FloatToInt(v, mode); });
  } else if constexpr (std::is_same_v<U, int32_t> && std::is_same_v<T, float>) {
    twin::RequireMode(from, to, roundMode, true, false);
    twin::FuseUnary(d, s, count, [mode](int32_t v) { return twin::IntToFloat(v, mode); });
  } else if constexpr (std::is_same_v<U, uint8_t> && std::is_same_v<T, half>) {  // exact: 0..255
    if (!none) twin::UnsupportedCast(from, to, roundMode, "widening casts take CAST_NONE");
    twin::FuseUnary(d, s, count, [](uint8_t v) { return half(float(v)); });
  } else if constexpr (twin::A2HasOtherCast<T, U>()) {
    twin::UnsupportedCast(from, to, roundMode, "A2 has this pair (Cast.md), the twin does not implement it");
  } else {
    twin::UnsupportedCast(from, to, roundMode, "this dtype pair has no Cast on Atlas A2 (go through float)");
  }
}

}  // namespace AscendC
