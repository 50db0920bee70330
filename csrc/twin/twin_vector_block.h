// CPU twin, vector unit: the per-block mask/repeat instructions, BlockReduceSum/Max (= ReduceDataBlock)
// and Brcb, in CANN's signatures (impl/basic_api/kernel_operator_vec_reduce_intf_impl.h,
// include/basic_api/kernel_operator_vec_brcb_intf.h). Geometry, records and rules: twin_vector_repeat.h.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "twin_vector_repeat.h"

namespace AscendC {
namespace twin {

// One block's sum as ReduceDataBlock.md 关键特性说明 draws it: adjacent pairs (lanes 2i, 2i + 1), then
// the pairs' sums pairwise, over the block's 8 float / 16 half lanes; lanes past n are +0, as in
// RepeatTreeSum. Every addition rounded to T.
template <typename T>
inline T BlockTreeSum(const T* x, uint32_t n) {  // 1 <= n <= lanes of a block
  constexpr uint32_t kLanes = kBlockBytes / sizeof(T);
  T level[kLanes];
  for (uint32_t i = 0; i < kLanes; ++i) level[i] = i < n ? x[i] : T(0);
  for (uint32_t w = kLanes / 2; w >= 1; w /= 2)
    for (uint32_t k = 0; k < w; ++k) level[k] = AddRounded(level[2 * k], level[2 * k + 1]);
  return level[0];
}

template <bool isSum, typename T>
inline void BlockReduce(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t repeatTime,
                        int32_t mask, int32_t dstRepStride, int32_t srcBlkStride, int32_t srcRepStride) {
  constexpr uint32_t perBlock = kBlockBytes / sizeof(T);
  CheckReduceParams(api, src, mask, repeatTime, dstRepStride, srcBlkStride, srcRepStride);
  // ReduceDataBlock.md 约束说明: dst 16-byte aligned for half, 32-byte for float (8 results of T);
  // dstRepStride in those 8 results
  RequireAlignedTo(api, "dst", dst, 8 * sizeof(T));
  const uint32_t R = uint32_t(repeatTime), m = uint32_t(mask);
  if (R == 0 || m == 0) return;  // ReduceDataBlock.md 约束说明: a NOP on A2 (nothing touched)
  const RepeatGeo gs = MaskedGeo(src, m, uint32_t(srcBlkStride), uint32_t(srcRepStride));
  // A block no lane of which takes part gets no value: dst keeps its data (ReduceDataBlock.md, A2)
  const uint32_t active = (m + perBlock - 1) / perBlock;
  RepeatGeo gd;
  gd.base = dst.TwinUbOffset(), gd.repPitch = uint64_t(dstRepStride) * 8 * sizeof(T), gd.lastBytes = active * sizeof(T);
  RequireExtent(api, "src", src, gs, R);
  RequireExtent(api, "dst", dst, gd, R);
  RequireRepeatOverlap(api, "src", gd, gs, R, false);
  if (Recording()) RecordRepeat(api, DtypeName<T>(), R, uint64_t(R) * m, sizeof(T), gd, {gs});
  if constexpr (InSet<T>(DtypeSet::kFloat)) {
    const T* s = src.TwinData();
    T* d = dst.TwinData();
    std::vector<T> out(size_t(R) * active);
    T lanes[256 / sizeof(T)];
    for (uint32_t r = 0; r < R; ++r) {
      GatherLanes(s, r, m, srcBlkStride, srcRepStride, lanes);
      for (uint32_t j = 0; j < active; ++j) {
        const T* x = lanes + j * perBlock;
        const uint32_t n = std::min(perBlock, m - j * perBlock);
        T v = x[0];
        if constexpr (isSum) v = BlockTreeSum(x, n);
        else
          for (uint32_t i = 1; i < n; ++i) v = x[i] > v ? x[i] : v;
        out[size_t(r) * active + j] = v;
      }
    }
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t j = 0; j < active; ++j)
        d[uint64_t(r) * uint32_t(dstRepStride) * 8 + j] = out[size_t(r) * active + j];
  }
}

}  // namespace twin

// dst[r * 8 * dstRepStride + j] = the sum of block j of repeat r (its lanes under the mask), a tree per
// block (twin::BlockTreeSum).
template <typename T, bool isSetMask = true>
inline void BlockReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                           const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  twin::BlockReduce<true>("BlockReduceSum", dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride);
}

// dst[r * 8 * dstRepStride + j] = the largest of block j of repeat r (its lanes under the mask)
template <typename T, bool isSetMask = true>
inline void BlockReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                           const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  twin::BlockReduce<false>("BlockReduceMax", dst, src, repeatTime, mask, dstRepStride, srcBlkStride, srcRepStride);
}

// Brcb (Brcb.md): repeat r takes src[8r .. 8r + 8), contiguous, and fills block j of the repeat
// (at r * dstRepStride + j * dstBlkStride blocks) with src[8r + j].
template <typename T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint8_t repeatTime,
                 const BrcbRepeatParams& repeatParams) {
  const char* api = "Brcb";
  constexpr uint32_t perBlock = twin::kBlockBytes / sizeof(T);
  twin::RequireDtype<T>(api, twin::DtypeSet::kMove);  // Brcb.md 数据类型, A2: the Duplicate set
  const BrcbRepeatParams& p = repeatParams;
  // Brcb.md 约束说明: dstBlkStride 0 is undefined behaviour
  if (p.dstBlkStride == 0) twin::Violation("repeat parameters", "Brcb dstBlkStride 0 is undefined on A2 (Brcb.md)");
  dst.TwinCheckAligned(api);
  src.TwinCheckAligned(api);
  const uint32_t R = repeatTime;
  if (R == 0) return;  // Brcb.md 约束说明: a NOP on A2 (nothing touched)
  twin::RepeatGeo gs, gd;
  gs.base = src.TwinUbOffset(), gs.repPitch = 8 * sizeof(T), gs.lastBytes = 8 * sizeof(T);
  gd.base = dst.TwinUbOffset(), gd.blocks = 8, gd.lastBytes = twin::kBlockBytes;
  gd.blkPitch = uint64_t(p.dstBlkStride) * twin::kBlockBytes,
  gd.repPitch = uint64_t(p.dstRepStride) * twin::kBlockBytes;
  twin::RequireExtent(api, "src", src, gs, R);
  twin::RequireExtent(api, "dst", dst, gd, R);
  // Brcb.md 约束说明: source and destination may not share memory
  const uint64_t sb = gs.base, se = gs.base + gs.Extent(R);
  for (uint32_t r = 0; r < R; ++r)
    gd.ForEachRun(r, [&](uint64_t b, uint64_t e) {
      if (b < se && sb < e)
        twin::Violation("operand overlap", "Brcb repeat " + std::to_string(r) + " writes UB bytes [" +
                                               std::to_string(b) + ", " + std::to_string(e) + ") inside its source [" +
                                               std::to_string(sb) + ", " + std::to_string(se) +
                                               "): A2's Brcb does not support them sharing memory");
    });
  if (twin::Recording()) twin::RecordRepeat(api, twin::DtypeName<T>(), R, uint64_t(R) * 8, sizeof(T), gd, {gs});
  if constexpr (twin::InSet<T>(twin::DtypeSet::kMove)) {
    const T* s = src.TwinData();
    T* d = dst.TwinData();
    for (uint32_t r = 0; r < R; ++r)
      for (uint32_t j = 0; j < 8; ++j) {
        T* block = d + (uint64_t(r) * p.dstRepStride + uint64_t(j) * p.dstBlkStride) * perBlock;
        std::fill(block, block + perBlock, s[uint64_t(r) * 8 + j]);
      }
  }
}

}  // namespace AscendC
