// The masks of the fused attention kernels on the AIVs, shared by the forward and the backward: a block
// of scores S [rows, pp] (fp32, rows pp apart) is Min'd with a bound that is kMasked where a key is
// masked and kKept elsewhere, so exp(kMasked - max) is 0 in any row that keeps a key:
//   atten_mask (True or any non-zero byte = masked), read from GM per block (AttentionLoadMask);
//   the band of sparse modes 2-4 (attention_blocks.h), computed from a column ramp (AttentionApplyBand).
#pragma once
#include "kernel_operator.h"
// after kernel_operator.h: its functions are __aicore__
#include "attention_blocks.h"
#include "attention_buffers.h"
#include "row_ops.h"

using namespace AscendC;
static_assert(kAttentionMaxRows == row_ops::kMaxRows && kAttentionBlockFloats == row_ops::kBlock,
              "the buffer plan's rows and blocks are row_ops'");

namespace attention_mask {
constexpr float kMasked = -1e30f;  // a masked score (finite: kMasked - kMasked is 0, not NaN)
constexpr float kKept = 1e30f;     // the bound of a kept score: Min leaves it
}  // namespace attention_mask

// Rows [row, row + rows) x keys [j0, j0 + cols) of batch b, head n of atten_mask into `dst`, each row
// padded with 1 (masked) to mp bytes; returns mp. An MTE2 copy: the caller syncs before reading it.
__aicore__ inline uint32_t AttentionLoadMask(const LocalTensor<uint8_t>& dst, const GlobalTensor<uint8_t>& mask,
                                             const AttentionTilingData& t, int64_t b, int64_t n, int64_t row,
                                             int64_t j0, uint32_t rows, uint32_t cols) {
  const uint32_t mp = (cols + 31) / 32 * 32;
  const int64_t off = b * t.maskStrideB + n * t.maskStrideN + row * t.maskStrideS + j0;
  DataCopyPad(dst, mask[off], DataCopyExtParams(uint16_t(rows), cols, uint32_t(t.maskStrideS - cols), 0, 0),
              DataCopyPadExtParams<uint8_t>(mp != cols, 0, uint8_t(mp - cols), 1));
  return mp;
}

// S = min(S, bound): bound from the loaded mask bytes (mp per row), through half (uint8 casts to half only).
__aicore__ inline void AttentionApplyMask(const LocalTensor<float>& s, const LocalTensor<float>& bound,
                                          const LocalTensor<uint8_t>& maskBytes, const LocalTensor<half>& maskHalf,
                                          uint32_t rows, uint32_t pp, uint32_t mp) {
  using namespace attention_mask;
  using row_ops::kBlock;
  Cast(maskHalf, maskBytes, RoundMode::CAST_NONE, rows * mp);
  Cast(bound, maskHalf, RoundMode::CAST_NONE, rows * mp);
  Mins(bound, bound, 1.0f, int32_t(rows * mp));  // a uint8 mask: any non-zero byte masks
  Muls(bound, bound, kMasked - kKept, int32_t(rows * mp));
  Adds(bound, bound, kKept, int32_t(rows * mp));
  const uint8_t sRep = uint8_t(pp / kBlock), bRep = uint8_t(mp / kBlock);
  for (uint32_t c = 0; c < pp; c += row_ops::kLanes) {
    const uint32_t w = pp - c < row_ops::kLanes ? pp - c : row_ops::kLanes;
    Min(s[c], s[c], bound[c], uint64_t(w), uint8_t(rows), BinaryRepeatParams(1, 1, 1, sRep, sRep, bRep));
  }
}

// Keys [cols, pp) of every row (the padding LoadS fills with kMasked) masked again: softcapping maps kMasked to
// -softcap, which exp no longer makes 0. One Min over each row's last 8 lanes, against a bound row built from
// `ramp` (0, 1, ...) in `bound`.
__aicore__ inline void AttentionMaskPad(const LocalTensor<float>& s, const LocalTensor<float>& bound,
                                        const LocalTensor<float>& ramp, uint32_t rows, uint32_t cols, uint32_t pp) {
  using namespace attention_mask;
  using row_ops::kBlock;
  if (rows == 0 || pp == cols) return;
  const uint32_t last = pp - kBlock;
  Adds(bound, ramp, 1.0f - float(cols - last), int32_t(kBlock));  // lane i is column last + i: >= 1 from cols on
  Maxs(bound, bound, 0.0f, int32_t(kBlock));
  Mins(bound, bound, 1.0f, int32_t(kBlock));
  Muls(bound, bound, kMasked - kKept, int32_t(kBlock));
  Adds(bound, bound, kKept, int32_t(kBlock));
  const uint8_t rep = uint8_t(pp / kBlock);
  Min(s[last], s[last], bound, uint64_t(kBlock), uint8_t(rows), BinaryRepeatParams(1, 1, 1, rep, rep, 0));
}

// A band edge of row 0 relative to the block, clamped so that adding a row index (< 64) and clamping to
// [-1, top] gives what the unclamped edge would.
__aicore__ inline int64_t AttentionClampEdge(int64_t edge, int64_t top) {
  const int64_t bottom = -int64_t(row_ops::kMaxRows) - 2;
  return edge < bottom ? bottom : (edge > top ? top : edge);
}

// The band as a bound on the rows the block cuts: kMasked left of a row's first kept key and from its
// end on. Block row r is query row i0 + rowRamp[r] of a batch of s1 rows and s2 keys (rowRamp: r, or
// r's query row when heads are stacked; from iFirst to iLast), keys [j0, j0 + cols) held pp apart.
// Each row's edges relative to j0 follow its query row (the band is a diagonal), clamped to [-1, pp + 1]
// so the float arithmetic stays exact; then per key: masked (1) where key >= hi or key < lo.
// `ramp` holds 0, 1, ... (>= pp); `edges` 2 x 64 floats, `blocks` 2 x 64 x 8 floats; `bound` rows x pp.
__aicore__ inline void AttentionApplyBand(const LocalTensor<float>& s, const LocalTensor<float>& bound,
                                          const LocalTensor<float>& ramp, const LocalTensor<float>& rowRamp,
                                          const LocalTensor<float>& edges, const LocalTensor<float>& blocks,
                                          const AttentionTilingData& t, int64_t i0, int64_t iFirst, int64_t iLast,
                                          uint32_t rows, int64_t s1, int64_t s2, int64_t j0, uint32_t cols,
                                          uint32_t pp) {
  using namespace attention_mask;
  using row_ops::kBlock;
  using row_ops::kMaxRows;
  if (rows == 0) return;
  int64_t lo0, hi0, lo1, hi1;
  AttentionRowKeys(t, iFirst, s1, s2, lo0, hi0);
  AttentionRowKeys(t, iLast, s1, s2, lo1, hi1);
  if (lo1 <= j0 && hi0 >= j0 + cols) return;  // every row keeps the whole block (lo, hi grow with the row)
  const int64_t offset = t.bottomRight ? s2 - s1 : 0, top = int64_t(pp) + 1;
  const int64_t hiAt0 = AttentionClampEdge(i0 + offset + t.nextTokens + 1 - j0, top);
  const int64_t loAt0 = AttentionClampEdge(i0 + offset - t.preTokens - j0, top);
  const int64_t hiCap = s2 - j0 < top ? s2 - j0 : top;  // hi <= s2
  const float loFloor = j0 > 0 ? -1.0f : 0.0f;           // lo >= 0
  LocalTensor<float> hi = edges, lo = edges[kMaxRows], hiBlocks = blocks, loBlocks = blocks[kMaxRows * kBlock];
  Adds(hi, rowRamp, float(hiAt0), int32_t(rows));
  Mins(hi, hi, float(hiCap), int32_t(rows));
  Maxs(hi, hi, -1.0f, int32_t(rows));
  Adds(lo, rowRamp, float(loAt0), int32_t(rows));
  Maxs(lo, lo, loFloor, int32_t(rows));
  Mins(lo, lo, float(top), int32_t(rows));
  RowBlocks(hiBlocks, hi, rows);
  RowBlocks(loBlocks, lo, rows);
  const int32_t n = int32_t(rows * pp);
  const uint8_t rep = uint8_t(pp / kBlock);
  for (uint32_t pass = 0; pass < 2; ++pass) {
    for (uint32_t c = 0; c < pp; c += row_ops::kLanes) {
      const uint32_t w = pp - c < row_ops::kLanes ? pp - c : row_ops::kLanes;
      if (pass == 0)  // key - hi + 1: >= 1 from hi on
        Sub(bound[c], ramp[c], hiBlocks, uint64_t(w), uint8_t(rows), BinaryRepeatParams(1, 1, 0, rep, 0, 1));
      else  // lo - key: >= 1 left of lo
        Sub(bound[c], loBlocks, ramp[c], uint64_t(w), uint8_t(rows), BinaryRepeatParams(1, 0, 1, rep, 1, 0));
    }
    if (pass == 0) Adds(bound, bound, 1.0f, n);
    Maxs(bound, bound, 0.0f, n);
    Mins(bound, bound, 1.0f, n);  // 1: masked
    Muls(bound, bound, kMasked - kKept, n);
    Adds(bound, bound, kKept, n);
    Min(s, s, bound, n);
  }
}
