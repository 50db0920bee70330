// CPU twin, vector unit: count-form arithmetic, Cast with rounding modes, Gather, reductions, and
// the pipe synchronisation calls. Each op checks what the A2 vector unit checks only at run time
// on the device: operand dtype, 32-byte aligned operand addresses, and count within the operands.
#pragma once
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "twin_fuse.h"
#include "twin_math.h"
#include "twin_tensor.h"

namespace AscendC {

enum class RoundMode : uint8_t { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

namespace twin {

enum class DtypeSet { kArith, kFloat, kMove };  // Add/Mul..., Exp/Div/reductions..., Duplicate/Gather

template <typename T>
constexpr bool InSet(DtypeSet set) {
  constexpr bool isFloat = std::is_same_v<T, float> || std::is_same_v<T, half>;
  constexpr bool isArith = isFloat || std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>;
  // Duplicate.md / Gather.md 数据类型 for A2 (and CheckDuplicateSupportedType, dav_c220)
  constexpr bool isMove =
      isArith || std::is_same_v<T, uint16_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, bfloat16_t>;
  switch (set) {
    case DtypeSet::kFloat: return isFloat;
    case DtypeSet::kArith: return isArith;
    case DtypeSet::kMove: return isMove;
  }
  return false;
}

template <typename T>
inline void RequireDtype(const char* api, DtypeSet set) {
  if (InSet<T>(set)) return;
  const char* allowed = set == DtypeSet::kFloat   ? "half and float only"
                        : set == DtypeSet::kArith ? "int16, half, int32 and float"
                                                  : "int16, uint16, half, bfloat16, int32, uint32 and float";
  Violation("dtype support", std::string(api) + " does not support " + DtypeName<T>() +
                                 " on the Atlas A2 vector unit (" + allowed + "); Cast bfloat16 to float first");
}

template <typename T>
inline void RequireOperand(const LocalTensor<T>& t, int64_t count, const char* api) {
  t.TwinCheckAligned(api);
  t.TwinCheckCount(uint64_t(count), api);
}

// 通用地址重叠约束 (asc-devkit docs/zh/api/SIMD-API/通用说明和约束.md), which Add.md, Exp.md, Cast.md, ...
// refer to, for a count-form instruction: 256-byte repeats of the wider operand. Within a repeat a source
// and the destination overlap 100% or not at all; no repeat reads what an earlier repeat wrote. (The
// Add/Sub/Mul/Max/Min exception needs a repeat stride of 0, which the count form does not have.) For a
// narrowing Cast "100%" is read as the same start, which CANN's Cast check (CheckCastOverlappingHigh,
// impl/basic_api/utils/kernel_utils_constants.h) passes; a widening Cast may not overlap (Cast.md).
template <typename T, typename U>
inline void RequireOverlapRule(const char* api, const LocalTensor<T>& dst, const LocalTensor<U>& src, uint64_t count) {
  const uint64_t d = dst.TwinUbOffset(), s = src.TwinUbOffset(), dBytes = count * sizeof(T), sBytes = count * sizeof(U);
  if (d + dBytes <= s || s + sBytes <= d || (d == s && sizeof(T) <= sizeof(U))) return;
  if (sizeof(T) == sizeof(U) && s >= d + 256) return;  // the loop below's verdict, without the loop
  const auto fail = [&](const std::string& why) {
    Violation("operand overlap", std::string(api) + " source UB bytes [" + std::to_string(s) + ", " +
                                     std::to_string(s + sBytes) + ") partly overlap destination bytes [" +
                                     std::to_string(d) + ", " + std::to_string(d + dBytes) + "): " + why +
                                     " (A2: identical, disjoint, or the source a whole 256-byte repeat ahead)");
  };
  if (sizeof(T) > sizeof(U)) fail("a widening Cast's destination may not overlap its source (Cast.md)");
  const uint64_t lanes = 256 / std::max(sizeof(T), sizeof(U));
  for (uint64_t at = 0, r = 0; at < count; at += lanes, ++r) {
    const uint64_t n = std::min(lanes, count - at);
    const uint64_t s0 = s + at * sizeof(U), s1 = s0 + n * sizeof(U), d0 = d + at * sizeof(T), d1 = d0 + n * sizeof(T);
    if (s0 < d1 && d0 < s1 && s0 != d0)
      fail("repeat " + std::to_string(r) + "'s source and destination overlap without being the same bytes");
    if (s0 < d0 && d < s1)  // the earlier repeats wrote [d, d0)
      fail("repeat " + std::to_string(r) + " reads bytes an earlier repeat wrote");
  }
}

// A vector instruction for the record: the reads, then the write (element-wise unless told).
inline void RecordVector(const char* api, const char* dtype, uint64_t count, uint32_t elemBytes, const Access& write,
                         std::initializer_list<Access> reads, Init init = Init::kElementwise) {
  Instr in = OpInstr(Pipe::V, api, dtype, count, elemBytes);
  for (const Access& r : reads) in.Add(r);
  in.Add(write);
  in.access[in.nAccess - 1].init = init;
  Emit(in);
}

inline void RequireCount(int64_t count, const char* api) {
  if (count < 0) Violation("UB bounds", std::string(api) + " with negative count " + std::to_string(count));
}

// `acc`: an accumulator the instruction also reads (MulAddDst, FusedMulAdd read their dst).
template <DtypeSet set, typename T, typename U = T>
inline void CheckBinary(const char* api, const LocalTensor<T>& dst, const LocalTensor<U>& a, const LocalTensor<U>& b,
                        int32_t count, const LocalTensor<T>* acc = nullptr) {
  RequireDtype<T>(api, set);
  RequireCount(count, api);
  RequireOperand(dst, count, api);
  RequireOperand(a, count, api);
  RequireOperand(b, count, api);
  RequireOverlapRule(api, dst, a, uint64_t(count));
  RequireOverlapRule(api, dst, b, uint64_t(count));
  if (Recording()) {
    const Access w = dst.TwinWrite(count, Init::kElementwise);
    if (acc)
      RecordVector(api, DtypeName<T>(), count, sizeof(T), w,
                   {a.TwinRead(count), b.TwinRead(count), acc->TwinRead(count)});
    else RecordVector(api, DtypeName<T>(), count, sizeof(T), w, {a.TwinRead(count), b.TwinRead(count)});
  }
}

// The loops compile only for dtypes the instruction supports; the rest stop at RequireDtype.
template <DtypeSet set, typename T, typename F>
inline void Binary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                   int32_t count, F f) {
  CheckBinary<set>(api, dst, a, b, count);
  if constexpr (InSet<T>(set)) FuseBinary(dst.TwinPtr(), a.TwinPtr(), b.TwinPtr(), uint32_t(count), f);
}

template <DtypeSet set, typename T, typename F>
inline void Unary(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t count, F f) {
  RequireDtype<T>(api, set);
  RequireCount(count, api);
  RequireOperand(dst, count, api);
  RequireOperand(src, count, api);
  RequireOverlapRule(api, dst, src, uint64_t(count));
  if (Recording())
    RecordVector(api, DtypeName<T>(), count, sizeof(T), dst.TwinWrite(count, Init::kElementwise),
                 {src.TwinRead(count)});
  if constexpr (InSet<T>(set)) FuseUnary(dst.TwinPtr(), src.TwinPtr(), uint32_t(count), f);
}

}  // namespace twin

// ---- binary, count form ----
#define ASCENDC_TWIN_BINARY(NAME, SET, EXPR)                                                               \
  template <typename T, bool isSetMask = true>                                                             \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,      \
                   const int32_t& count) {                                                                 \
    twin::Binary<twin::DtypeSet::SET>(#NAME, dst, src0, src1, count, [](auto a, auto b) { return EXPR; }); \
  }
ASCENDC_TWIN_BINARY(Add, kArith, a + b)
ASCENDC_TWIN_BINARY(Sub, kArith, a - b)
ASCENDC_TWIN_BINARY(Mul, kArith, a* b)
ASCENDC_TWIN_BINARY(Max, kArith, a > b ? a : b)
ASCENDC_TWIN_BINARY(Min, kArith, a < b ? a : b)
ASCENDC_TWIN_BINARY(Div, kFloat, a / b)
#undef ASCENDC_TWIN_BINARY

namespace twin {
// MulAddDst and FusedMulAdd on A2: the product is rounded to T, then the sum. The A2 boundary-value
// table (docs/zh/api/附录/Memory矢量计算接口边界值汇总.md, 表21 MulAddDst, 表22 FusedMulAdd) lists the
// product as an intermediate of its own, with T's range (MAX * MAX is +inf, saturated to MAX in half
// saturation mode), and MAX * MAX + -inf as nan: a fused multiply-add gives -inf there. The table
// fixes the product's range, not its precision; rounding it to T is the model that gives every row.
// (Only the newer Reg unit documents a fused result: Reg矢量计算接口精度标准汇总.md, "同比Fma".)
// half: the float product of two halves is exact, so T(product) is the correctly rounded half
// product, and float(p) + float(c) rounded once to half the correctly rounded half sum.
template <typename T>
inline T MulThenAddElem(T a, T b, T c) {
  const T p = T(float(a) * float(b));
  return T(float(p) + float(c));
}
}  // namespace twin

// dst = src0 * src1 + dst, the product rounded to T before the add (twin::MulThenAddElem)
template <typename T, typename U>
inline void MulAddDst(const LocalTensor<T>& dst, const LocalTensor<U>& src0, const LocalTensor<U>& src1,
                      const int32_t& count) {
  static_assert(std::is_same_v<T, U>, "the twin implements MulAddDst for one dtype");
  twin::CheckBinary<twin::DtypeSet::kFloat>("MulAddDst", dst, src0, src1, count, &dst);
  if constexpr (twin::InSet<T>(twin::DtypeSet::kFloat))
    twin::FuseTernaryAcc(dst.TwinPtr(), src0.TwinPtr(), src1.TwinPtr(), uint32_t(count),
                         [](auto a, auto b, auto d) { return twin::MulThenAddElem(a, b, d); });
}

// dst = src0 * dst + src1, the product rounded to T before the add (twin::MulThenAddElem)
template <typename T>
inline void FusedMulAdd(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                        const int32_t& count) {
  twin::CheckBinary<twin::DtypeSet::kFloat>("FusedMulAdd", dst, src0, src1, count, &dst);
  if constexpr (twin::InSet<T>(twin::DtypeSet::kFloat))
    twin::FuseTernaryAcc(dst.TwinPtr(), src0.TwinPtr(), src1.TwinPtr(), uint32_t(count),
                         [](auto a, auto b, auto d) { return twin::MulThenAddElem(a, d, b); });
}

// ---- with a scalar: the scalar has the tensor's type, as on the device ----
#define ASCENDC_TWIN_SCALAR(NAME, SET, EXPR)                                                                           \
  template <typename T, bool isSetMask = true>                                                                         \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count) { \
    const T s = scalarValue;                                                                                           \
    twin::Unary<twin::DtypeSet::SET>(#NAME, dst, src, count, [s](auto a) { return EXPR; });                            \
  }
ASCENDC_TWIN_SCALAR(Adds, kArith, a + s)
ASCENDC_TWIN_SCALAR(Muls, kArith, a* s)
ASCENDC_TWIN_SCALAR(Maxs, kArith, a > s ? a : s)
ASCENDC_TWIN_SCALAR(Mins, kArith, a < s ? a : s)
#undef ASCENDC_TWIN_SCALAR

// ---- unary ----
#define ASCENDC_TWIN_UNARY(NAME, SET, EXPR)                                                      \
  template <typename T, bool isReuseSource = false>                                              \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) { \
    twin::Unary<twin::DtypeSet::SET>(#NAME, dst, src, count, [](auto a) { return EXPR; });       \
  }
ASCENDC_TWIN_UNARY(Exp, kFloat, twin::ExpF(float(a)))
ASCENDC_TWIN_UNARY(Ln, kFloat, std::log(float(a)))
ASCENDC_TWIN_UNARY(Sqrt, kFloat, std::sqrt(float(a)))
ASCENDC_TWIN_UNARY(Rsqrt, kFloat, 1.0f / std::sqrt(float(a)))
ASCENDC_TWIN_UNARY(Reciprocal, kFloat, 1.0f / float(a))
ASCENDC_TWIN_UNARY(Abs, kFloat, a < T(0) ? T(-a) : a)
ASCENDC_TWIN_UNARY(Relu, kArith, a > T(0) ? a : T(0))
#undef ASCENDC_TWIN_UNARY

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count) {
  twin::RequireDtype<T>("Duplicate", twin::DtypeSet::kMove);
  twin::RequireCount(count, "Duplicate");
  twin::RequireOperand(dst, count, "Duplicate");
  if (count == 0) return;  // NOP on A2, dst not written (Duplicate.md 约束说明)
  if (twin::Recording())
    twin::RecordVector("Duplicate", twin::DtypeName<T>(), count, sizeof(T), dst.TwinWrite(count, twin::Init::kDefined),
                       {});
  const T v = scalarValue;
  twin::FuseNullary(dst.TwinPtr(), uint32_t(count), [v]() { return v; });
}

// Gather: dst[i] = src[srcBaseOffset + srcOffset[i]], offsets in bytes.
template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseOffset, const uint32_t count) {
  const char* api = "Gather";
  twin::RequireDtype<T>(api, twin::DtypeSet::kMove);
  // On 2201 the count form issues count / (256 / sizeof(T)) full repeats through a uint8_t repeatTime,
  // then one tail repeat (asc-devkit impl/basic_api/kernel_operator_vec_gather_intf_impl.h:204-235): past
  // 255 full repeats the count wraps and the device gathers only part of it, silently.
  constexpr uint32_t perRepeat = 256 / sizeof(T);
  if (count / perRepeat > twin::kMaxRepeat)
    twin::Violation("repeat range", std::string(api) + " count " + std::to_string(count) + " " + twin::DtypeName<T>() +
                                        " needs " + std::to_string(count / perRepeat) + " full repeats of " +
                                        std::to_string(perRepeat) + " elements; the A2 count form holds at most " +
                                        std::to_string(twin::kMaxRepeat) + " (uint8_t repeatTime), so count <= " +
                                        std::to_string(twin::kMaxRepeat * perRepeat + perRepeat - 1));
  twin::RequireOperand(dst, count, api);
  twin::RequireOperand(srcOffset, count, api);
  src.TwinCheckAligned(api);
  const uint32_t* off = srcOffset.TwinData();
  const uint8_t* base = reinterpret_cast<const uint8_t*>(src.TwinData()) + srcBaseOffset;
  const uint64_t srcBytes = uint64_t(src.GetSize()) * sizeof(T);
  T* d = dst.TwinData();
  uint32_t lo = ~0u, hi = 0;  // the span of the source the offsets reach
  for (uint32_t i = 0; i < count; ++i) lo = std::min(lo, off[i]), hi = std::max(hi, off[i]);
  const uint64_t from = count ? uint64_t(srcBaseOffset) + lo : 0;
  const uint64_t to = count ? std::min<uint64_t>(uint64_t(srcBaseOffset) + hi + sizeof(T), srcBytes) : 0;
  // A2's Gather does not support source and destination in the same memory (Gather.md 约束说明): the
  // source bytes it reads must not be bytes it writes. (Offsets past the source are named below.)
  const uint64_t srcAt = src.TwinUbOffset(), dstAt = dst.TwinUbOffset(), dstEnd = dstAt + uint64_t(count) * sizeof(T);
  if (to > from && srcAt + from < dstEnd && dstAt < srcAt + to)
    twin::Violation("operand overlap", std::string(api) + " reads source UB bytes [" + std::to_string(srcAt + from) +
                                           ", " + std::to_string(srcAt + to) + ") and writes destination bytes [" +
                                           std::to_string(dstAt) + ", " + std::to_string(dstEnd) +
                                           "): A2's Gather does not support source and destination sharing memory");
  if (twin::Recording()) {  // reads the span of the source the offsets reach, and the offsets
    twin::Instr in = twin::OpInstr(twin::Pipe::V, api, twin::DtypeName<T>(), count, sizeof(T));
    in.Add(twin::Access::Read(twin::Space::UB, src.TwinUbOffset() + from, to > from ? to - from : 0, sizeof(T)));
    in.Add(srcOffset.TwinRead(count));
    in.Add(dst.TwinWrite(count, twin::Init::kGather));
    in.gatherOffsets = off, in.gatherBase = uint32_t(src.TwinUbOffset() + srcBaseOffset);
    twin::Emit(in);
  }
  // Offsets are checked as they are used: inside src and whole elements, else the rule fires.
  const auto badOffset = [&](uint32_t o) {
    if (o % sizeof(T) != 0)
      twin::Violation("32-byte alignment", "Gather offset " + std::to_string(o) + " is not a whole element");
    twin::Violation("UB bounds", "Gather offset " + std::to_string(o) + " reads past the " + std::to_string(srcBytes) +
                                     "-byte source");
  };
  uint32_t i = 0;
#if defined(__AVX2__)
  if constexpr (sizeof(T) == 4) {
    // Each group of 8 outputs whose sources lie in one aligned 8-element window (pair swaps,
    // half-row swaps with 8 | D/2, ...) is one in-register permute; others use a hardware gather.
    const int* b = reinterpret_cast<const int*>(base);
    const int64_t srcElems = int64_t(srcBytes - srcBaseOffset) / int64_t(sizeof(T));
    const __m256i notLow3 = _mm256_set1_epi32(~7), low2 = _mm256_set1_epi32(3);
    const __m256i last = _mm256_set1_epi32(int32_t(srcElems - 1));
    for (; i + 8 <= count; i += 8) {
      const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + i));
      const __m256i idx = _mm256_srli_epi32(o, 2);
      const int window = _mm_cvtsi128_si32(_mm256_castsi256_si128(idx)) & ~7;
      const __m256i rel = _mm256_sub_epi32(idx, _mm256_set1_epi32(window));
      __m256i v;
      if (_mm256_testz_si256(rel, notLow3) && _mm256_testz_si256(o, low2) && window + 8 <= srcElems) {
        v = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + window)), rel);
      } else {
        // lanes beyond the source (or with offsets >= 2^31) compare greater than `last`
        const __m256i beyond = _mm256_or_si256(_mm256_cmpgt_epi32(idx, last), _mm256_srai_epi32(o, 31));
        if (!_mm256_testz_si256(beyond, beyond) || !_mm256_testz_si256(o, low2)) break;  // the scalar loop names it
        v = _mm256_i32gather_epi32(b, o, 1);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), v);
    }
  }
#endif
  for (; i < count; ++i) {
    if (off[i] % sizeof(T) != 0 || uint64_t(srcBaseOffset) + off[i] + sizeof(T) > srcBytes) badOffset(off[i]);
    d[i] = *reinterpret_cast<const T*>(base + off[i]);
  }
}

// ---- reductions (count form): dst[0] = reduce(src[0:count]) ----
namespace twin {
// ReduceSum's count form on A2 (ReduceSum.md 关键特性说明, "方式一" for the count form on Atlas A2): one
// vcadd in counter mode over all count elements (impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h,
// ReduceSumImpl(dst, src, count)). Inside each 256-byte repeat (64 float / 128 half lanes) a binary tree
// of adjacent pairs (lanes 2i and 2i+1, then the pairs' sums pairwise, ...; ReduceDataBlock.md and
// Reg Reduce.md "ReduceType::SUM累加顺序"), lanes past count as +0 (Reg Reduce.md: masked lanes are 0);
// the repeats' sums are then added in order into the accumulator, which holds a T (its bits are read
// back as T: get_acc_val). Every addition is rounded to T: a half sum is a half tree.
// (float(a) + float(b) rounded once to half is the correctly rounded half sum: 24 >= 2 * 11 + 2 bits.)
template <typename T>
inline T AddRounded(T a, T b) {
  return T(float(a) + float(b));
}

template <typename T>
inline T RepeatTreeSum(const T* x, uint32_t n) {  // 1 <= n <= lanes
  constexpr uint32_t kLanes = 256 / sizeof(T);
  T level[kLanes / 2];
  uint32_t i = 0;
  if (n == kLanes) {
    for (; i < kLanes / 2; ++i) level[i] = AddRounded(x[2 * i], x[2 * i + 1]);
  } else {
    for (; 2 * i + 1 < n; ++i) level[i] = AddRounded(x[2 * i], x[2 * i + 1]);
    if (2 * i < n) level[i] = AddRounded(x[2 * i], T(0)), ++i;  // -0 + +0 is +0, as for a masked lane
    for (; i < kLanes / 2; ++i) level[i] = T(0);
  }
  for (uint32_t w = kLanes / 4; w >= 1; w /= 2)
    for (uint32_t k = 0; k < w; ++k) level[k] = AddRounded(level[2 * k], level[2 * k + 1]);
  return level[0];
}

template <typename T>
inline T CountReduceSum(const T* x, uint32_t n) {  // n >= 1
  constexpr uint32_t kLanes = 256 / sizeof(T);
  T acc = RepeatTreeSum(x, std::min(n, kLanes));
  for (uint32_t at = kLanes; at < n; at += kLanes)
    acc = AddRounded(acc, RepeatTreeSum(x + at, std::min(n - at, kLanes)));
  return acc;
}
}  // namespace twin

// dst[0] = the sum of src[0, count) in A2's order (twin::CountReduceSum); dst[1..] and sharedTmpBuffer are
// untouched (the count form on A2 does not use it). count 0 is a no-op: nothing is issued, dst is not written.
template <typename T, bool isSetMask = true>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count) {
  const char* api = "ReduceSum";
  twin::RequireDtype<T>(api, twin::DtypeSet::kFloat);
  twin::RequireCount(count, api);
  twin::RequireOperand(src, count, api);
  twin::RequireOperand(dst, 1, api);
  twin::RequireOperand(sharedTmpBuffer, 1, api);
  if (count == 0) return;
  if (twin::Recording())
    twin::RecordVector(api, twin::DtypeName<T>(), count, sizeof(T), dst.TwinWrite(1, twin::Init::kReduce),
                       {src.TwinRead(count)}, twin::Init::kReduce);
  if constexpr (twin::InSet<T>(twin::DtypeSet::kFloat)) {
    const T sum = twin::CountReduceSum(src.TwinData(), uint32_t(count));
    dst.TwinData()[0] = sum;
  }
}

template <typename T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = 0) {
  const char* api = "ReduceMax";
  twin::RequireDtype<T>(api, twin::DtypeSet::kFloat);
  twin::RequireCount(count, api);
  twin::RequireOperand(src, count, api);
  twin::RequireOperand(dst, calIndex ? 2 : 1, api);
  twin::RequireOperand(sharedTmpBuffer, 1, api);
  if (twin::Recording())
    twin::RecordVector(api, twin::DtypeName<T>(), count, sizeof(T),
                       dst.TwinWrite(calIndex ? 1 + 4 / sizeof(T) : 1, twin::Init::kReduce), {src.TwinRead(count)},
                       twin::Init::kReduce);
  if constexpr (!twin::InSet<T>(twin::DtypeSet::kFloat)) return;
  const T* x = src.TwinData();
  T best = count > 0 ? x[0] : T(0);
  int32_t at = 0;
  for (int32_t i = 1; i < count; ++i)
    if (x[i] > best) best = x[i], at = i;
  dst.TwinData()[0] = best;
  if (calIndex) {  // the index follows the value, as raw bits
    twin::RequireOperand(dst, 1 + 4 / sizeof(T), api);
    const uint32_t index = uint32_t(at);
    std::memcpy(dst.TwinData() + 1, &index, 4);
  }
}

}  // namespace AscendC

#include "twin_cast.h"
