// Pieces the RMSNorm forward and backward kernels share.
#pragma once
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "rms_norm_tiling_data.h"

// Columns of the chunk starting at `col`: the chunk width, or what is left of the row.
__aicore__ inline uint32_t NormChunkLen(const NormTilingData& t, uint32_t col) {
  const uint32_t left = t.hidden - col;
  return left < t.chunk ? left : t.chunk;
}

// offset + gamma[col, col + len) in fp32 into gammaF; a narrower gamma goes through rawBuf and a Cast.
// Gemma's weight is (1 + gamma) formed in fp32 (HF: `1.0 + weight.float()`), before any product uses it.
template <typename G>
__aicore__ inline void LoadGammaFp32(const AscendC::LocalTensor<float>& gammaF,
                                     AscendC::TBuf<AscendC::TPosition::VECCALC>& rawBuf,
                                     const AscendC::GlobalTensor<G>& gammaGm, uint32_t col, uint32_t len,
                                     float offset) {
  using namespace AscendC;
  SyncPipes<HardEvent::V_MTE2>();  // the previous chunk's gamma has been used
  const DataCopyExtParams params(1, len * sizeof(G), 0, 0, 0);
  if constexpr (sizeof(G) == sizeof(float)) {
    DataCopyPad(gammaF.template ReinterpretCast<G>(), gammaGm[col], params, DataCopyPadExtParams<G>());
    SyncPipes<HardEvent::MTE2_V>();
  } else {
    LocalTensor<G> raw = rawBuf.Get<G>();
    DataCopyPad(raw, gammaGm[col], params, DataCopyPadExtParams<G>());
    SyncPipes<HardEvent::MTE2_V>();
    Cast(gammaF, raw, RoundMode::CAST_NONE, len);
  }
  if (offset != 0.0f) {
    PipeBarrier<PIPE_V>();
    Adds(gammaF, gammaF, offset, static_cast<int32_t>(len));
  }
  PipeBarrier<PIPE_V>();
}

// sums[8 r] = sum of row r's first n floats, for `rows` rows `pitch` floats apart (src is scratch and is
// overwritten). Halves are folded with Add down to one 256-byte repeat, then one short ReduceSum per
// row: Add streams at ~2 cycles per repeat where ReduceSum's vcadd takes ~7 (pipeline model,
// python/ascendc_ops/harness/platforms), and folding all rows level by level needs one PIPE_V barrier
// per level, not per row. Split points are multiples of 64 floats: operands stay 32-byte aligned.
__aicore__ inline void FoldSumRows(const AscendC::LocalTensor<float>& sums, const AscendC::LocalTensor<float>& src,
                                   const AscendC::LocalTensor<float>& tmp, uint32_t n, uint32_t rows, uint32_t pitch) {
  using namespace AscendC;
  while (n > 64) {
    const uint32_t half = ((n + 1) / 2 + 63) / 64 * 64;  // >= n - half: every element is folded in
    for (uint32_t r = 0; r < rows; ++r)
      Add(src[r * pitch], src[r * pitch], src[r * pitch + half], static_cast<int32_t>(n - half));
    PipeBarrier<PIPE_V>();
    n = half;
  }
  for (uint32_t r = 0; r < rows; ++r) {
    ReduceSum(sums[r * 8], src[r * pitch], tmp, static_cast<int32_t>(n));
    PipeBarrier<PIPE_V>();  // the rows share tmp
  }
}

// dst[0] = sum of src[0, n); src is overwritten.
__aicore__ inline void FoldSum(const AscendC::LocalTensor<float>& dst, const AscendC::LocalTensor<float>& src,
                               const AscendC::LocalTensor<float>& tmp, uint32_t n) {
  FoldSumRows(dst, src, tmp, n, 1, 0);
}

// Compensated sum of src[0, n), in place (src and scratch[0, n) are overwritten), for AccumulateChunk to add
// up on the scalar unit: FoldSum's fp32 tree is off by ~log2(n) roundings of the partial sums.
// Each level folds the top half onto the bottom with TwoSum (Knuth): s = a + b, e = (a - (s - bv)) + (b - bv)
// with bv = s - a, so a + b == s + e exactly; s replaces a (the values halve, as in FoldSumRows) and e lands
// in b's place. Down to 8 values in src[0, 8) with the rounding errors in [8, n), which loses nothing; then
// scratch[0] = the errors' FoldSum (its own rounding is ~2^-24 of theirs: negligible). Seven dependent vector
// ops per level over the half folded, plus one plain fold of the errors. Split points are multiples of
// 8 floats: operands stay 32-byte aligned. n <= 8: nothing is issued.
__aicore__ inline void CompensatedSum(const AscendC::LocalTensor<float>& src,
                                      const AscendC::LocalTensor<float>& scratch,
                                      const AscendC::LocalTensor<float>& tmp, uint32_t n) {
  using namespace AscendC;
  const uint32_t total = n;
  while (n > 8) {
    const uint32_t half = ((n + 1) / 2 + 7) / 8 * 8;  // >= n - half: every element is folded in
    const int32_t m = static_cast<int32_t>(n - half);
    const LocalTensor<float> a = src, b = src[half], s = scratch, v = scratch[half];
    Add(s, a, b, m);  // s = a + b
    PipeBarrier<PIPE_V>();
    Sub(v, s, a, m);  // bv = s - a
    PipeBarrier<PIPE_V>();
    Sub(b, b, v, m);  // b - bv
    PipeBarrier<PIPE_V>();
    Sub(v, s, v, m);  // av = s - bv
    PipeBarrier<PIPE_V>();
    Sub(a, a, v, m);  // a - av
    PipeBarrier<PIPE_V>();
    Add(b, a, b, m);  // e = (a - av) + (b - bv), in b's place
    PipeBarrier<PIPE_V>();
    Muls(a, s, 1.0f, m);  // s in a's place
    PipeBarrier<PIPE_V>();
    n = half;
  }
  if (total > 8) FoldSum(scratch, src[8], tmp, total - 8);
}

// hi + lo += v + e on the scalar unit, compensated (TwoSum of hi and v): the chunk sums of a split row.
__aicore__ inline void AccumulateCompensated(float& hi, float& lo, float v, float e) {
  const float s = hi + v;
  const float bv = s - hi;
  lo += ((hi - (s - bv)) + (v - bv)) + e;
  hi = s;
}

// hi + lo; a row with an Inf makes the errors NaN (Inf - Inf), while the plain sum hi is the Inf (or NaN) the
// uncompensated sum gives: then hi alone.
__aicore__ inline float CompensatedTotal(float hi, float lo) { return lo == lo ? hi + lo : hi; }

// hi + lo += what CompensatedSum left of an n-element sum (after a V_S sync): its min(n, 8) values, each by a
// scalar TwoSum (the values are the largest partial sums: a tree of them would round at their scale), and
// the errors' sum.
__aicore__ inline void AccumulateChunk(float& hi, float& lo, const AscendC::LocalTensor<float>& src,
                                       const AscendC::LocalTensor<float>& scratch, uint32_t n) {
  const uint32_t k = n < 8 ? n : 8;
  for (uint32_t i = 0; i < k; ++i) AccumulateCompensated(hi, lo, src.GetValue(i), 0.0f);
  if (n > 8) lo += scratch.GetValue(0);
}

// h = round_T(h) in place through the T buffer `t` (the gated norms: HF casts x * rstd to the input dtype
// before the weight); fp32 T: nothing to round.
template <typename T>
__aicore__ inline void RoundToT(const AscendC::LocalTensor<T>& t, const AscendC::LocalTensor<float>& h, int32_t n) {
  using namespace AscendC;
  if constexpr (sizeof(T) < sizeof(float)) {
    Cast(t, h, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
    PipeBarrier<PIPE_V>();
    Cast(h, t, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
    PipeBarrier<PIPE_V>();
  }
}
