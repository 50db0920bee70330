// CPU twin, vector logic instructions (count form): ShiftLeft, ShiftRight by a scalar, and Or, with
// the A2 rules of asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/逻辑计算/{ShiftLeft,ShiftRight,Or}.md:
// dtypes (shifts int16/uint16/int32/uint32, Or int16/uint16), the shift range [0, bits], 32-byte aligned
// operands, count within them, count 0 a NOP, and the address-overlap rule (twin::RequireOverlapRule).
#pragma once
#include <string>
#include <type_traits>

#include "twin_vector.h"

namespace AscendC {
namespace twin {

template <typename T>
constexpr bool IsShiftDtype() {
  return std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t> || std::is_same_v<T, int32_t> ||
         std::is_same_v<T, uint32_t>;
}

template <typename T>
constexpr bool IsOrDtype() {
  return std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>;
}

template <typename T>
inline void CheckLogic(const char* api, const LocalTensor<T>& dst, std::initializer_list<const LocalTensor<T>*> srcs,
                       int32_t count) {
  RequireCount(count, api);
  RequireOperand(dst, count, api);
  for (const LocalTensor<T>* s : srcs) {
    RequireOperand(*s, count, api);
    RequireOverlapRule(api, dst, *s, uint64_t(count));
  }
}

// Unsigned: logical shifts. Signed (ShiftLeft.md 功能说明): the left shift keeps the sign bit and drops
// the bit below it, the right shift copies the sign bit in. A shift by the full width leaves 0 (or the
// sign: -1 right, the sign bit alone left).
template <typename T>
inline T ShiftLeftElem(T a, uint32_t s) {
  using U = std::make_unsigned_t<T>;
  constexpr uint32_t bits = sizeof(T) * 8;
  const U shifted = s >= bits ? U(0) : U(U(a) << s);
  if constexpr (std::is_unsigned_v<T>) return T(shifted);
  constexpr U sign = U(U(1) << (bits - 1));
  return T(U((U(a) & sign) | (shifted & U(~sign))));
}

template <typename T>
inline T ShiftRightElem(T a, uint32_t s) {
  constexpr uint32_t bits = sizeof(T) * 8;
  if (s >= bits) return std::is_unsigned_v<T> ? T(0) : T(a < 0 ? -1 : 0);
  return T(a >> s);  // arithmetic for signed T (C++20 defines it)
}

template <typename T, typename F>
inline void Shift(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, T scalarValue, int32_t count,
                  F elem) {
  if constexpr (!IsShiftDtype<T>())
    Violation("dtype support", std::string(api) + " does not support " + DtypeName<T>() +
                                   " on Atlas A2 (int16, uint16, int32 and uint32 only)");
  CheckLogic(api, dst, {&src}, count);
  constexpr int64_t bits = sizeof(T) * 8;
  if (int64_t(scalarValue) < 0 || int64_t(scalarValue) > bits)
    Violation("scalar range", std::string(api) + " by " + std::to_string(int64_t(scalarValue)) + " on " +
                                  DtypeName<T>() + ": A2 takes [0, " + std::to_string(bits) + "]");
  if (count == 0) return;  // a NOP on A2: dst is not written
  if (Recording())
    RecordVector(api, DtypeName<T>(), count, sizeof(T), dst.TwinWrite(count, Init::kElementwise),
                 {src.TwinRead(count)});
  if constexpr (IsShiftDtype<T>()) {
    const uint32_t s = uint32_t(scalarValue);
    FuseUnary(dst.TwinPtr(), src.TwinPtr(), uint32_t(count), [s, elem](T a) { return elem(a, s); });
  }
}

}  // namespace twin

template <typename T, bool isSetMask = true>
inline void ShiftLeft(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                      const int32_t& count) {
  twin::Shift("ShiftLeft", dst, src, scalarValue, count, [](auto a, uint32_t s) { return twin::ShiftLeftElem(a, s); });
}

template <typename T, bool isSetMask = true>
inline void ShiftRight(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,
                       const int32_t& count) {
  twin::Shift("ShiftRight", dst, src, scalarValue, count,
              [](auto a, uint32_t s) { return twin::ShiftRightElem(a, s); });
}

// dst = src0 | src1, 16-bit only: Or.md advises ReinterpretCast to uint16 for 32-bit data, which the
// twin requires (A2 accepts uint32 only with a doubled count, a form the docs discourage).
template <typename T, bool isSetMask = true>
inline void Or(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
               const int32_t& count) {
  const char* api = "Or";
  if constexpr (!twin::IsOrDtype<T>())
    twin::Violation("dtype support", std::string(api) + " does not support " + twin::DtypeName<T>() +
                                         " on Atlas A2 (int16 and uint16 only; ReinterpretCast 32-bit data)");
  twin::CheckLogic(api, dst, {&src0, &src1}, count);
  if (count == 0) return;  // a NOP on A2
  if (twin::Recording())
    twin::RecordVector(api, twin::DtypeName<T>(), count, sizeof(T), dst.TwinWrite(count, twin::Init::kElementwise),
                       {src0.TwinRead(count), src1.TwinRead(count)});
  if constexpr (twin::IsOrDtype<T>())
    twin::FuseBinary(dst.TwinPtr(), src0.TwinPtr(), src1.TwinPtr(), uint32_t(count), [](T a, T b) { return T(a | b); });
}

}  // namespace AscendC
