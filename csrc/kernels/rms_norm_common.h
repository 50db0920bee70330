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

// gamma[col, col + len) in fp32 into gammaF; a narrower gamma goes through rawBuf and a Cast.
template <typename G>
__aicore__ inline void LoadGammaFp32(const AscendC::LocalTensor<float>& gammaF,
                                     AscendC::TBuf<AscendC::TPosition::VECCALC>& rawBuf,
                                     const AscendC::GlobalTensor<G>& gammaGm, uint32_t col, uint32_t len) {
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
