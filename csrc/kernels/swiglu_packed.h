// SwiGLU forward with inner 1 (a last dim of 2 split in halves, e.g. cann-bench's [1000003, 2]): each row of x
// is one (a, b) pair, which the row kernel would land as two 32-byte blocks. Here a tile of R rows is one
// unpadded run of 2R elements; two Gathers with the same offsets (2 r elements), from element 0 and from
// element 1, de-interleave it into a and b, then the row kernel's maths runs on R contiguous values.
#pragma once
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "swiglu_buffers.h"
#include "swiglu_tiling_data.h"

template <typename T>
class KernelSwigluPacked {
 public:
  __aicore__ inline KernelSwigluPacked() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SwigluTilingData& tiling, AscendC::TPipe* pipe) {
    t_ = tiling;
    const uint32_t rows = t_.tileRows;
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), t_.outer * 2);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y), t_.outer);
    const SwigluPackedUb ub = SwigluPackedBuffers(rows, sizeof(T));  // the plan the tiling counted
    pipe->InitBuffer(inX_, SWIGLU_PACKED_BUFFER_NUM, ub.pairs);
    pipe->InitBuffer(outY_, SWIGLU_PACKED_BUFFER_NUM, ub.out);
    pipe->InitBuffer(aBuf_, ub.half);
    pipe->InitBuffer(bBuf_, ub.half);
    if constexpr (sizeof(T) != sizeof(float)) {
      pipe->InitBuffer(aFloatBuf_, ub.widened);
      pipe->InitBuffer(bFloatBuf_, ub.widened);
      pipe->InitBuffer(yFloatBuf_, ub.widened);
    }
    pipe->InitBuffer(offsetBuf_, ub.offsets);
  }

  __aicore__ inline void Process() {
    int64_t begin = 0, count = 0;
    BlockTaskRange(t_.tasksPerBlock, t_.tasksRemainder, begin, count);
    if (count <= 0) return;
    InitOffsets();
    // tile i + 1 is loaded while tile i is computed
    for (int64_t task = begin; task < begin + count; ++task) {
      if (task == begin) CopyIn(task);
      if (task + 1 < begin + count) CopyIn(task + 1);
      Compute(Rows(task));
      CopyOut(task);
    }
  }

 private:
  static constexpr int32_t SWIGLU_PACKED_BUFFER_NUM = kSwigluBufferNum;

  __aicore__ inline uint32_t Rows(int64_t task) const {
    const int64_t left = t_.outer - task * t_.tileRows;
    return static_cast<uint32_t>(left < t_.tileRows ? left : t_.tileRows);
  }

  // offset r = byte offset of pair r: the first 8 by the scalar unit, then doubling ([k, 2k) = [0, k) + k pairs)
  __aicore__ inline void InitOffsets() {
    using namespace AscendC;
    LocalTensor<int32_t> off = offsetBuf_.Get<int32_t>();
    const int32_t pairBytes = static_cast<int32_t>(2 * sizeof(T));
    for (int32_t r = 0; r < 8; ++r) off.SetValue(r, r * pairBytes);
    SyncPipes<HardEvent::S_V>();
    for (uint32_t k = 8; k < t_.tileRows; k *= 2) {
      const uint32_t n = k < t_.tileRows - k ? k : t_.tileRows - k;
      Adds(off[k], off, static_cast<int32_t>(k) * pairBytes, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
    }
  }

  __aicore__ inline void CopyIn(int64_t task) {
    using namespace AscendC;
    LocalTensor<T> x = inX_.AllocTensor<T>();
    const DataCopyExtParams params(1, 2 * Rows(task) * sizeof(T), 0, 0, 0);
    DataCopyPad(x, xGm_[static_cast<uint64_t>(task) * t_.tileRows * 2], params, DataCopyPadExtParams<T>());
    inX_.EnQue(x);
  }

  __aicore__ inline void Compute(uint32_t rows) {
    using namespace AscendC;
    const int32_t n = static_cast<int32_t>(rows);
    // 1. a = x[2 r], b = x[2 r + 1]
    LocalTensor<T> x = inX_.DeQue<T>();
    LocalTensor<T> a = aBuf_.Get<T>(), b = bBuf_.Get<T>();
    LocalTensor<uint32_t> off = offsetBuf_.Get<uint32_t>();
    Gather(a, x, off, 0, rows);
    Gather(b, x, off, static_cast<uint32_t>(sizeof(T)), rows);
    PipeBarrier<PIPE_V>();
    inX_.FreeTensor(x);
    // 2. y = round_T(silu(a) * b), in fp32 (swiglu.cpp's KernelSwiglu::Compute)
    LocalTensor<float> af = SwigluWiden(a, aFloatBuf_, n);
    LocalTensor<float> bf = SwigluWiden(b, bFloatBuf_, n);
    LocalTensor<T> y = outY_.AllocTensor<T>();
    LocalTensor<float> w = SwigluResult(y, yFloatBuf_);
    PipeBarrier<PIPE_V>();
    SwiGLU<float, false>(w, bf, af, 1.0f, rows);
    PipeBarrier<PIPE_V>();
    SwigluNarrow(y, w, n);
    outY_.EnQue(y);
  }

  __aicore__ inline void CopyOut(int64_t task) {
    using namespace AscendC;
    LocalTensor<T> y = outY_.DeQue<T>();
    DataCopyPad(yGm_[static_cast<uint64_t>(task) * t_.tileRows], y,
                DataCopyExtParams(1, Rows(task) * sizeof(T), 0, 0, 0));
    outY_.FreeTensor(y);
  }

  SwigluTilingData t_;
  AscendC::GlobalTensor<T> xGm_, yGm_;
  AscendC::TQue<AscendC::QuePosition::VECIN, SWIGLU_PACKED_BUFFER_NUM> inX_;
  AscendC::TQue<AscendC::QuePosition::VECOUT, SWIGLU_PACKED_BUFFER_NUM> outY_;
  AscendC::TBuf<AscendC::TPosition::VECCALC> aBuf_, bBuf_, aFloatBuf_, bFloatBuf_, yFloatBuf_, offsetBuf_;
};
