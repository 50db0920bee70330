// CPU twin, vector unit: the mask/repeat forms (高维切分, "level 0") with the continuous mask: binary
// Add/Sub/Mul/Div/Max/Min, WholeReduceSum/Max, BlockReduceSum/Max and Brcb, in CANN's signatures
// (impl/basic_api/kernel_operator_vec_{binary,reduce,brcb}_intf_impl.h). Geometry and rules:
// docs/zh/api/SIMD-API/基础API/Memory矢量计算/SIMD计算说明/高维切分.md and 掩码.md: a repeat is 8 blocks of
// 32 bytes, block j of repeat r at r * repStride + j * blkStride blocks from the operand's start, the mask
// the number of leading lanes of a repeat that take part (at most 256 bytes' worth); lanes past it are
// neither read nor written. Each call checks what the A2 unit checks only at run time: dtype, ranges,
// 32-byte aligned starts, every byte touched inside its LocalTensor, and the overlap rules
// (docs/zh/api/SIMD-API/通用说明和约束.md, 通用地址重叠约束). The record gets one run per repeat for
// each operand and the instruction's real repeatTime (what the pipeline model costs).
#pragma once
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "twin_vector.h"

namespace AscendC {

constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;

// include/basic_api/kernel_struct_binary.h: the same fields, defaults and constructor order
struct BinaryRepeatParams {
  BinaryRepeatParams() {}
  BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                     const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
      : dstBlkStride(dstBlkStrideIn),
        src0BlkStride(src0BlkStrideIn),
        src1BlkStride(src1BlkStrideIn),
        dstRepStride(dstRepStrideIn),
        src0RepStride(src0RepStrideIn),
        src1RepStride(src1RepStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

// include/basic_api/kernel_struct_brcb.h
struct BrcbRepeatParams {
  BrcbRepeatParams() {}
  BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
      : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
  uint32_t blockNumber = DEFAULT_BLK_NUM;
  uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
  uint16_t dstBlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
  uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
  uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

// impl/basic_api/utils/kernel_utils_mode.h
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

namespace twin {

// The bytes one operand touches: per repeat `blocks` runs, `blkPitch` apart, all 32 bytes long but the
// last (`lastBytes`); repeats `repPitch` apart. Offsets are bytes from the operand's start.
struct RepeatGeo {
  uint64_t base = 0;  // UB byte of the operand's start
  uint64_t blkPitch = 0, repPitch = 0;
  uint32_t blocks = 1, lastBytes = 0;

  uint32_t RunBytes(uint32_t j) const { return j + 1 == blocks ? lastBytes : kBlockBytes; }
  // One past the last byte of repeat r, from the operand's start.
  uint64_t RepeatEnd(uint32_t r) const {
    uint64_t end = uint64_t(r) * repPitch + (blocks - 1) * blkPitch + lastBytes;
    if (blocks >= 2) end = std::max(end, uint64_t(r) * repPitch + (blocks - 2) * blkPitch + kBlockBytes);
    return end;
  }
  uint64_t Extent(uint32_t repeats) const { return repeats ? RepeatEnd(repeats - 1) : 0; }
  template <typename F>
  void ForEachRun(uint32_t r, F f) const {  // f(begin, end) in UB bytes, the runs of repeat r
    for (uint32_t j = 0; j < blocks; ++j) {
      const uint64_t b = base + uint64_t(r) * repPitch + uint64_t(j) * blkPitch;
      f(b, b + RunBytes(j));
    }
  }
  // Lanes of repeat r within one block each: exact when the runs of a repeat leave no gap.
  bool Gapless() const { return blocks == 1 || blkPitch == 0 || blkPitch == kBlockBytes; }
  // The record's span: one run per repeat, from its first to its last byte (a repeat whose blocks leave
  // gaps is recorded whole: more than it touches, never less).
  Span RecordSpan(uint32_t repeats) const { return Span{base, repPitch, uint32_t(RepeatEnd(0)), repeats}; }
};

// The operand geometry of a masked source/destination of T: `mask` leading lanes of each repeat.
template <typename T>
inline RepeatGeo MaskedGeo(const LocalTensor<T>& t, uint32_t mask, uint32_t blkStride, uint32_t repStride) {
  constexpr uint32_t perBlock = kBlockBytes / sizeof(T);
  RepeatGeo g;
  g.base = t.TwinUbOffset(), g.blkPitch = uint64_t(blkStride) * kBlockBytes,
  g.repPitch = uint64_t(repStride) * kBlockBytes;
  g.blocks = std::max<uint32_t>(1, (mask + perBlock - 1) / perBlock);
  g.lastBytes = (mask - (g.blocks - 1) * perBlock) * sizeof(T);
  if (blkStride == 0) g.blocks = 1, g.lastBytes = std::min(mask, perBlock) * sizeof(T);  // block 0 read again
  return g;
}
// The element lane i of repeat r reads/writes (blkStride 0: block 0's lane i % perBlock every time).
template <typename T>
inline uint64_t LaneElem(uint32_t r, uint32_t i, uint32_t blkStride, uint32_t repStride) {
  constexpr uint32_t perBlock = kBlockBytes / sizeof(T);
  return (uint64_t(r) * repStride + uint64_t(i / perBlock) * blkStride) * perBlock + i % perBlock;
}

inline void RequireRange(const char* api, const char* what, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    Violation("repeat parameters", std::string(api) + " " + what + " " + std::to_string(v) + " outside [" +
                                       std::to_string(lo) + ", " + std::to_string(hi) + "] (Atlas A2)");
}
template <typename T>
inline void RequireMask(const char* api, int64_t mask) {  // 掩码.md: at most one repeat's lanes
  RequireRange(api, (std::string("mask (continuous mode, ") + DtypeName<T>() + ")").c_str(), mask, 0, 256 / sizeof(T));
}

// Every byte the geometry touches lies inside the operand's LocalTensor.
template <typename T>
inline void RequireExtent(const char* api, const char* name, const LocalTensor<T>& t, const RepeatGeo& g,
                          uint32_t repeats) {
  t.TwinCheckCount(0, api);
  const uint64_t end = g.Extent(repeats), have = uint64_t(t.GetSize()) * sizeof(T);
  if (end > have)
    Violation("UB bounds", std::string(api) + " " + name + " touches bytes up to " + std::to_string(end) +
                               " from its start (repeatTime " + std::to_string(repeats) + ", repeat pitch " +
                               std::to_string(g.repPitch) + " B, block pitch " + std::to_string(g.blkPitch) +
                               " B) but its LocalTensor holds " + std::to_string(have) + " bytes (" +
                               std::to_string(t.GetSize()) + " " + DtypeName<T>() + ")");
}
template <typename T>
inline void RequireAlignedTo(const char* api, const char* name, const LocalTensor<T>& t, uint32_t bytes) {
  if (t.TwinUbOffset() % bytes != 0)
    Violation("32-byte alignment", std::string(api) + " " + name + " starts at UB byte " +
                                       std::to_string(t.TwinUbOffset()) + ", not a multiple of " +
                                       std::to_string(bytes) + " (Atlas A2)");
}

// 通用地址重叠约束 for a mask/repeat instruction: within a repeat a source and the destination overlap
// 100% (the same runs) or not at all; no repeat reads bytes an earlier repeat wrote, unless `crossOk`
// (the Add/Sub/Mul/Max/Min exception for src1 with a repeat stride of 0).
inline void RequireRepeatOverlap(const char* api, const char* srcName, const RepeatGeo& d, const RepeatGeo& s,
                                 uint32_t repeats, bool crossOk) {
  const uint64_t dlo = d.base, dhi = d.base + d.Extent(repeats), slo = s.base, shi = s.base + s.Extent(repeats);
  if (dhi <= slo || shi <= dlo) return;
  // In place (the same geometry): each repeat reads exactly what it writes, so only a repeat reading an
  // earlier repeat's bytes can break the rule, and repeats a full extent apart share none.
  const bool same = d.base == s.base && d.blkPitch == s.blkPitch && d.repPitch == s.repPitch && d.blocks == s.blocks &&
                    d.lastBytes == s.lastBytes;
  if (same && (crossOk || repeats <= 1 || d.repPitch >= d.RepeatEnd(0))) return;
  constexpr uint16_t kNone = 0xffff;
  std::vector<uint16_t> first(dhi - dlo, kNone);  // per destination byte: the first repeat writing it
  for (uint32_t r = 0; r < repeats; ++r)
    d.ForEachRun(r, [&](uint64_t b, uint64_t e) {
      for (uint64_t x = b; x < e; ++x)
        if (first[x - dlo] == kNone) first[x - dlo] = uint16_t(r);
    });
  const auto fail = [&](uint32_t r, const std::string& why) {
    Violation("operand overlap", std::string(api) + " " + srcName + " and dst, repeat " + std::to_string(r) + ": " +
                                     why +
                                     " (A2 通用地址重叠约束: within a repeat identical or disjoint; no repeat "
                                     "reads what an earlier one wrote)");
  };
  for (uint32_t r = 0; r < repeats; ++r) {
    bool within = false;
    s.ForEachRun(r, [&](uint64_t b, uint64_t e) {
      for (uint64_t x = std::max(b, dlo); x < std::min(e, dhi); ++x) {
        const uint16_t w = first[x - dlo];
        if (w < r && !crossOk)
          fail(r, "reads UB byte " + std::to_string(x) + " that repeat " + std::to_string(w) + " wrote");
        within = within || w == r;
      }
    });
    if (!within) continue;
    std::vector<std::pair<uint64_t, uint64_t>> dr, sr;
    d.ForEachRun(r, [&](uint64_t b, uint64_t e) { dr.emplace_back(b, e); });
    s.ForEachRun(r, [&](uint64_t b, uint64_t e) { sr.emplace_back(b, e); });
    if (dr != sr) fail(r, "source and destination overlap without being the same bytes");
  }
}

// One mask/repeat instruction for the record: one run per repeat per operand, costed by `repeats`.
inline void RecordRepeat(const char* api, const char* dtype, uint32_t repeats, uint64_t lanes, uint32_t elemBytes,
                         const RepeatGeo& dst, std::initializer_list<RepeatGeo> reads) {
  Instr in = OpInstr(Pipe::V, api, dtype, lanes, elemBytes);
  in.repeats = repeats;
  for (const RepeatGeo& g : reads) {
    Access a;
    a.span = g.RecordSpan(repeats), a.space = Space::UB, a.elemBytes = uint8_t(elemBytes);
    in.Add(a);
  }
  Access w;
  w.span = dst.RecordSpan(repeats), w.space = Space::UB, w.write = true, w.init = Init::kRowwise;
  w.elemBytes = uint8_t(elemBytes);
  in.Add(w);
  Emit(in);
}

enum class BinOp { kAdd, kSub, kMul, kDiv, kMax, kMin };

template <BinOp op, typename T>
inline T BinElem(T a, T b) {
  if constexpr (op == BinOp::kAdd) return a + b;  // the count forms' expressions (twin_vector.h)
  else if constexpr (op == BinOp::kSub) return a - b;
  else if constexpr (op == BinOp::kMul) return a * b;
  else if constexpr (op == BinOp::kDiv) return a / b;
  else if constexpr (op == BinOp::kMax) return a > b ? a : b;
  else return a < b ? a : b;
}

template <BinOp op, typename T>
inline void BinaryRepeat(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                         const LocalTensor<T>& src1, uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& p) {
  constexpr DtypeSet set = op == BinOp::kDiv ? DtypeSet::kFloat : DtypeSet::kArith;
  RequireDtype<T>(api, set);
  RequireMask<T>(api, int64_t(std::min<uint64_t>(mask, uint64_t(INT64_MAX))));
  // 高维切分.md: "dstBlkStride不支持设置为0" (a source's 0 re-reads its first block)
  if (p.dstBlkStride == 0) Violation("repeat parameters", std::string(api) + " dstBlkStride 0 is undefined on A2");
  const uint32_t m = uint32_t(mask), R = repeatTime;
  const RepeatGeo gd = MaskedGeo(dst, m, p.dstBlkStride, p.dstRepStride);
  const RepeatGeo g0 = MaskedGeo(src0, m, p.src0BlkStride, p.src0RepStride);
  const RepeatGeo g1 = MaskedGeo(src1, m, p.src1BlkStride, p.src1RepStride);
  for (const auto* t : {&dst, &src0, &src1}) t->TwinCheckAligned(api);
  if (R == 0 || m == 0) return;  // Add.md 约束说明: a NOP on A2, dst not written (nothing touched)
  RequireExtent(api, "dst", dst, gd, R);
  RequireExtent(api, "src0", src0, g0, R);
  RequireExtent(api, "src1", src1, g1, R);
  RequireRepeatOverlap(api, "src0", gd, g0, R, false);
  // 通用地址重叠约束: Add/Sub/Mul/Max/Min for half/int32/float may read in src1 what an earlier repeat
  // wrote when src1RepStride or dstRepStride is 0 (accumulation)
  constexpr bool accOk = op != BinOp::kDiv && !std::is_same_v<T, int16_t>;
  RequireRepeatOverlap(api, "src1", gd, g1, R, accOk && (p.src1RepStride == 0 || p.dstRepStride == 0));
  if (Recording()) RecordRepeat(api, DtypeName<T>(), R, uint64_t(R) * m, sizeof(T), gd, {g0, g1});
  if constexpr (InSet<T>(set)) {
    T* d = dst.TwinData();
    const T *a = src0.TwinData(), *b = src1.TwinData();
    T lanes[256 / sizeof(T)];
    constexpr uint32_t perBlock = kBlockBytes / sizeof(T);
    if (p.src0BlkStride == 1 && p.src1BlkStride == 1 && p.dstBlkStride == 1) {  // a repeat's lanes contiguous
      for (uint32_t r = 0; r < R; ++r) {
        const T* ar = a + uint64_t(r) * p.src0RepStride * perBlock;
        const T* br = b + uint64_t(r) * p.src1RepStride * perBlock;
        T* dr = d + uint64_t(r) * p.dstRepStride * perBlock;
        for (uint32_t i = 0; i < m; ++i) lanes[i] = BinElem<op>(ar[i], br[i]);
        for (uint32_t i = 0; i < m; ++i) dr[i] = lanes[i];
      }
      return;
    }
    for (uint32_t r = 0; r < R; ++r) {  // a repeat reads all its lanes before it writes; a 32-byte block at a time
      for (uint32_t i0 = 0; i0 < m; i0 += perBlock) {
        const T* ab = a + LaneElem<T>(r, i0, p.src0BlkStride, p.src0RepStride);
        const T* bb = b + LaneElem<T>(r, i0, p.src1BlkStride, p.src1RepStride);
        const uint32_t len = std::min(perBlock, m - i0);
        for (uint32_t i = 0; i < len; ++i) lanes[i0 + i] = BinElem<op>(ab[i], bb[i]);
      }
      for (uint32_t i0 = 0; i0 < m; i0 += perBlock) {
        T* db = d + LaneElem<T>(r, i0, p.dstBlkStride, p.dstRepStride);
        const uint32_t len = std::min(perBlock, m - i0);
        for (uint32_t i = 0; i < len; ++i) db[i] = lanes[i0 + i];
      }
    }
  }
}

// The checks shared by WholeReduce* and BlockReduce* (ReduceRepeat.md, ReduceDataBlock.md 参数说明):
// repeatTime in [0, 255], the strides in [0, 2^16 - 1], the mask per dtype, src 32-byte aligned.
template <typename T>
inline void CheckReduceParams(const char* api, const LocalTensor<T>& src, int32_t mask, int32_t repeatTime,
                              int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
  RequireDtype<T>(api, DtypeSet::kFloat);
  RequireRange(api, "repeatTime", repeatTime, 0, kMaxRepeat);
  RequireMask<T>(api, mask);
  RequireRange(api, "dstRepStride", dstRepStride, 0, 65535);
  RequireRange(api, "srcBlkStride", srcBlkStride, 0, 65535);
  RequireRange(api, "srcRepStride", srcRepStride, 0, 65535);
  src.TwinCheckAligned(api);
}

// The lanes of repeat r of a masked source, in lane order.
template <typename T>
inline void GatherLanes(const T* s, uint32_t r, uint32_t mask, int32_t blkStride, int32_t repStride, T* out) {
  constexpr uint32_t perBlock = kBlockBytes / sizeof(T);
  for (uint32_t i0 = 0; i0 < mask; i0 += perBlock) {  // a 32-byte block at a time
    const T* block = s + LaneElem<T>(r, i0, uint32_t(blkStride), uint32_t(repStride));
    for (uint32_t i = 0; i < std::min(perBlock, mask - i0); ++i) out[i0 + i] = block[i];
  }
}

}  // namespace twin

// ---- binary, mask/repeat form with the continuous mask ----
#define ASCENDC_TWIN_BINARY_REPEAT(NAME, OP)                                                                         \
  template <typename T, bool isSetMask = true>                                                                       \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint64_t mask, \
                   const uint8_t repeatTime, const BinaryRepeatParams& repeatParams) {                               \
    twin::BinaryRepeat<twin::BinOp::OP>(#NAME, dst, src0, src1, mask, repeatTime, repeatParams);                     \
  }
ASCENDC_TWIN_BINARY_REPEAT(Add, kAdd)
ASCENDC_TWIN_BINARY_REPEAT(Sub, kSub)
ASCENDC_TWIN_BINARY_REPEAT(Mul, kMul)
ASCENDC_TWIN_BINARY_REPEAT(Div, kDiv)
ASCENDC_TWIN_BINARY_REPEAT(Max, kMax)
ASCENDC_TWIN_BINARY_REPEAT(Min, kMin)
#undef ASCENDC_TWIN_BINARY_REPEAT

// WholeReduceSum (= ReduceRepeat<SUM>): dst[r * dstRepStride] = the sum of repeat r's `mask` lanes, as a
// binary tree of adjacent pairs over the repeat's 64 float / 128 half lanes, masked lanes +0
// (ReduceRepeat.md 关键特性说明 -> ReduceDataBlock.md 关键特性说明; twin::RepeatTreeSum). dstRepStride in
// elements of T, dst aligned to sizeof(T) (ReduceRepeat.md 表3).
template <typename T, bool isSetMask = true>
inline void WholeReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  const char* api = "WholeReduceSum";
  twin::CheckReduceParams(api, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
  twin::RequireAlignedTo(api, "dst", dst, sizeof(T));
  const uint32_t R = uint32_t(repeatTime), m = uint32_t(mask);
  const twin::RepeatGeo gs = twin::MaskedGeo(src, m, uint32_t(srcBlkStride), uint32_t(srcRepStride));
  twin::RepeatGeo gd;
  gd.base = dst.TwinUbOffset(), gd.repPitch = uint64_t(dstRepStride) * sizeof(T), gd.lastBytes = sizeof(T);
  if (R == 0 || m == 0) return;  // ReduceRepeat.md 约束说明: a NOP on A2 (nothing touched)
  twin::RequireExtent(api, "src", src, gs, R);
  twin::RequireExtent(api, "dst", dst, gd, R);
  twin::RequireRepeatOverlap(api, "src", gd, gs, R, false);
  if (twin::Recording()) twin::RecordRepeat(api, twin::DtypeName<T>(), R, uint64_t(R) * m, sizeof(T), gd, {gs});
  if constexpr (twin::InSet<T>(twin::DtypeSet::kFloat)) {
    const T* s = src.TwinData();
    T* d = dst.TwinData();
    std::vector<T> sums(R);  // every repeat reads before any writes (the overlap rule keeps them apart)
    T lanes[256 / sizeof(T)];
    for (uint32_t r = 0; r < R; ++r) {
      twin::GatherLanes(s, r, m, srcBlkStride, srcRepStride, lanes);
      sums[r] = twin::RepeatTreeSum(lanes, m);
    }
    for (uint32_t r = 0; r < R; ++r) d[uint64_t(r) * uint32_t(dstRepStride)] = sums[r];
  }
}

// WholeReduceMax (= ReduceRepeat<MAX>): per repeat the largest of its `mask` lanes and its lane index
// (the smallest on ties), laid out by `order`; the index is stored as raw bits: in a T slot for
// VALUE_INDEX / INDEX_VALUE, as a uint32 for ONLY_INDEX. dstRepStride's unit and dst's alignment are
// ReduceRepeat.md 表3's: 2 x sizeof(T) with both, sizeof(T) for the value only, 4 bytes for the index only.
template <typename T, bool isSetMask = true>
inline void WholeReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
  const char* api = "WholeReduceMax";
  twin::CheckReduceParams(api, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
  const uint32_t unit = order == ReduceOrder::ORDER_ONLY_VALUE   ? sizeof(T)
                        : order == ReduceOrder::ORDER_ONLY_INDEX ? 4u
                                                                 : 2u * sizeof(T);
  twin::RequireAlignedTo(api, "dst", dst, unit);
  const uint32_t R = uint32_t(repeatTime), m = uint32_t(mask);
  const twin::RepeatGeo gs = twin::MaskedGeo(src, m, uint32_t(srcBlkStride), uint32_t(srcRepStride));
  twin::RepeatGeo gd;
  gd.base = dst.TwinUbOffset(), gd.repPitch = uint64_t(dstRepStride) * unit, gd.lastBytes = unit;
  if (R == 0 || m == 0) return;  // ReduceRepeat.md 约束说明: a NOP on A2 (nothing touched)
  twin::RequireExtent(api, "src", src, gs, R);
  twin::RequireExtent(api, "dst", dst, gd, R);
  twin::RequireRepeatOverlap(api, "src", gd, gs, R, false);
  if (twin::Recording()) twin::RecordRepeat(api, twin::DtypeName<T>(), R, uint64_t(R) * m, sizeof(T), gd, {gs});
  if constexpr (twin::InSet<T>(twin::DtypeSet::kFloat)) {
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    const T* s = src.TwinData();
    uint8_t* d = reinterpret_cast<uint8_t*>(dst.TwinData());
    std::vector<T> best(R);
    std::vector<uint32_t> at(R);
    T lanes[256 / sizeof(T)];
    for (uint32_t r = 0; r < R; ++r) {
      twin::GatherLanes(s, r, m, srcBlkStride, srcRepStride, lanes);
      best[r] = lanes[0], at[r] = 0;
      for (uint32_t i = 1; i < m; ++i)
        if (lanes[i] > best[r]) best[r] = lanes[i], at[r] = i;
    }
    for (uint32_t r = 0; r < R; ++r) {
      uint8_t* o = d + uint64_t(r) * uint64_t(dstRepStride) * unit;
      const Bits idx = Bits(at[r]);
      switch (order) {
        case ReduceOrder::ORDER_VALUE_INDEX:
          std::memcpy(o, &best[r], sizeof(T)), std::memcpy(o + sizeof(T), &idx, sizeof(T));
          break;
        case ReduceOrder::ORDER_INDEX_VALUE:
          std::memcpy(o, &idx, sizeof(T)), std::memcpy(o + sizeof(T), &best[r], sizeof(T));
          break;
        case ReduceOrder::ORDER_ONLY_VALUE: std::memcpy(o, &best[r], sizeof(T)); break;
        case ReduceOrder::ORDER_ONLY_INDEX: std::memcpy(o, &at[r], 4); break;
      }
    }
  }
}

}  // namespace AscendC
