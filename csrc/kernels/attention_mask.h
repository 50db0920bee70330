// The masks of the fused attention kernels on the AIVs, shared by the forward and the backward: a block
// of scores S [rows, pp] (fp32, rows pp apart) is Min'd with a bound that is kMasked where a key is
// masked and kKept elsewhere, so exp(kMasked - max) is 0 in any row that keeps a key:
//   atten_mask (True or any non-zero byte = masked), read from GM per block (AttentionLoadMask);
//   the band of sparse modes 2-4 (attention_blocks.h), computed from a column ramp (AttentionApplyBand).
#pragma once
#include "attention_blocks.h"
#include "kernel_operator.h"

using namespace AscendC;

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
  Cast(maskHalf, maskBytes, RoundMode::CAST_NONE, rows * mp);
  Cast(bound, maskHalf, RoundMode::CAST_NONE, rows * mp);
  Mins(bound, bound, 1.0f, int32_t(rows * mp));  // a uint8 mask: any non-zero byte masks
  Muls(bound, bound, kMasked - kKept, int32_t(rows * mp));
  Adds(bound, bound, kKept, int32_t(rows * mp));
  for (uint32_t r = 0; r < rows; ++r) Min(s[r * pp], s[r * pp], bound[r * mp], int32_t(pp));
}

// The band as a bound per row the block cuts: kMasked left of the row's first kept key and from its end
// on. Rows [i0, i0 + rows) of a batch of s1 rows and s2 keys, keys [j0, j0 + cols); `ramp` holds 0, 1, ...
__aicore__ inline void AttentionApplyBand(const LocalTensor<float>& s, const LocalTensor<float>& ramp,
                                          const LocalTensor<float>& a, const LocalTensor<float>& b,
                                          const AttentionTilingData& t, int64_t i0, uint32_t rows, int64_t s1,
                                          int64_t s2, int64_t j0, uint32_t cols, uint32_t pp) {
  using namespace attention_mask;
  for (uint32_t r = 0; r < rows; ++r) {
    int64_t lo, hi;
    AttentionRowKeys(t, i0 + r, s1, s2, lo, hi);
    if (lo <= j0 && hi >= j0 + cols) continue;  // the row keeps the whole block
    // keys relative to the block, clamped so the float arithmetic below stays exact
    const int64_t lr = lo - j0 < -1 ? -1 : (lo - j0 > int64_t(pp) + 1 ? int64_t(pp) + 1 : lo - j0);
    const int64_t hr = hi - j0 < -1 ? -1 : (hi - j0 > int64_t(pp) + 1 ? int64_t(pp) + 1 : hi - j0);
    const int32_t cnt = int32_t(pp);
    Adds(a, ramp, float(1 - hr), cnt);  // >= 1 from hi on, <= 0 before
    Maxs(a, a, 0.0f, cnt);
    Mins(a, a, 1.0f, cnt);
    Muls(b, ramp, -1.0f, cnt);
    Adds(b, b, float(lr), cnt);  // >= 1 left of lo, <= 0 from lo on
    Maxs(b, b, 0.0f, cnt);
    Mins(b, b, 1.0f, cnt);
    Add(a, a, b, cnt);
    Mins(a, a, 1.0f, cnt);  // 1: masked
    Muls(a, a, kMasked - kKept, cnt);
    Adds(a, a, kKept, cnt);
    Min(s[r * pp], s[r * pp], a, cnt);
  }
}
