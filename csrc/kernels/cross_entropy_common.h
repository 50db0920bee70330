// Pieces the cross-entropy forward and backward kernels share: chunk geometry, loads, widening and the fp32
// sum of a chunk.
#pragma once
#include "cross_entropy_buffers.h"
#include "cross_entropy_tiling_data.h"
#include "kernel_operator.h"
#include "kernel_utils.h"

// Columns of chunk k of a row: chunkCols, or what is left of the row.
__aicore__ inline uint32_t CrossEntropyChunkLen(const CrossEntropyTilingData& t, uint32_t k) {
  const int64_t left = t.cols - int64_t(k) * t.chunkCols;
  return static_cast<uint32_t>(left < t.chunkCols ? left : t.chunkCols);
}

// n elements of gm[first, first + n) into UB (one run; DataCopyPad leaves the padding to the next 32 bytes undefined,
// which no instruction here reads: every one below takes count n).
template <typename T>
__aicore__ inline void CrossEntropyLoad(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& gm,
                                        int64_t first, uint32_t n) {
  AscendC::DataCopyPad(dst, gm[first], AscendC::DataCopyExtParams(1, n * static_cast<uint32_t>(sizeof(T)), 0, 0, 0),
                       AscendC::DataCopyPadExtParams<T>());
}

template <typename T>
__aicore__ inline void CrossEntropyStore(const AscendC::GlobalTensor<T>& gm, int64_t first,
                                         const AscendC::LocalTensor<T>& src, uint32_t n) {
  AscendC::DataCopyPad(gm[first], src, AscendC::DataCopyExtParams(1, n * static_cast<uint32_t>(sizeof(T)), 0, 0, 0));
}

// fp32 view of a chunk: the chunk itself for float, widened into `wide` otherwise (exact: CAST_NONE).
template <typename T>
__aicore__ inline AscendC::LocalTensor<float> CrossEntropyWiden(const AscendC::LocalTensor<T>& src,
                                                                const AscendC::LocalTensor<float>& wide, uint32_t n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return src.template ReinterpretCast<float>();
  } else {
    AscendC::Cast(wide, src, AscendC::RoundMode::CAST_NONE, n);
    AscendC::PipeBarrier<PIPE_V>();
    return wide;
  }
}

// dst[0] = the sum of src[0, n) (src is overwritten). Halves are folded with Add down to one 256-byte repeat, then
// one ReduceSum: pairwise, ~log2(n) roundings, where ReduceSum's count form alone adds the repeats' sums in order
// (an error growing with n / 64). Split points are multiples of 64 floats, so operands stay 32-byte aligned.
__aicore__ inline void CrossEntropyFoldSum(const AscendC::LocalTensor<float>& dst,
                                           const AscendC::LocalTensor<float>& src,
                                           const AscendC::LocalTensor<float>& tmp, uint32_t n) {
  while (n > 64) {
    const uint32_t half = ((n + 1) / 2 + 63) / 64 * 64;  // >= n - half: every element is folded in
    AscendC::Add(src, src, src[half], static_cast<int32_t>(n - half));
    AscendC::PipeBarrier<PIPE_V>();
    n = half;
  }
  AscendC::ReduceSum(dst, src, tmp, static_cast<int32_t>(n));
  AscendC::PipeBarrier<PIPE_V>();
}
