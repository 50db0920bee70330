// Pieces the RMSNorm forward and backward kernels share.
#pragma once
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "norm_tiling_data.h"

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
