// Streaming copy y = x: the smallest complete Ascend C vector kernel, kept as a template for kernel
// authors and as the calibration case of the pipeline model (python/ascendc_ops/harness/pipeline).
// Each block copies its share of tiles through the three classic stages:
//   CopyIn  (MTE2, GM -> UB)  ->  Compute (V, UB -> UB)  ->  CopyOut (MTE3, UB -> GM)
// with tiling.bufferNum buffers per queue: 2 lets tile i+1 load while tile i is copied and stored,
// 1 serialises the stages (the model shows the difference). Elements are 2-byte words: any dtype.
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "stream_copy_tiling_data.h"

using namespace AscendC;

constexpr int32_t STREAM_COPY_MAX_BUFFERS = 2;  // queue depth; InitBuffer takes 1 or 2 from the tiling

class KernelStreamCopy {
 public:
  __aicore__ inline KernelStreamCopy() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const StreamCopyTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int16_t*>(x), t_.elems);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int16_t*>(y), t_.elems);
    pipe->InitBuffer(inQ_, static_cast<uint8_t>(t_.bufferNum), t_.tileElems * sizeof(int16_t));
    pipe->InitBuffer(outQ_, static_cast<uint8_t>(t_.bufferNum), t_.tileElems * sizeof(int16_t));
  }

  __aicore__ inline void Process() {
    int64_t begin = 0, count = 0;
    BlockTaskRange(t_.tilesPerBlock, t_.tilesRemainder, begin, count);
    for (int64_t tile = begin; tile < begin + count; ++tile) {
      const int64_t first = tile * t_.tileElems;
      const int64_t left = t_.elems - first;
      const uint32_t len = static_cast<uint32_t>(left < t_.tileElems ? left : t_.tileElems);
      CopyIn(first, len);
      Compute(len);
      CopyOut(first, len);
    }
  }

 private:
  __aicore__ inline void CopyIn(int64_t first, uint32_t len) {
    LocalTensor<int16_t> x = inQ_.AllocTensor<int16_t>();
    const uint8_t pad = static_cast<uint8_t>(PaddedLen<int16_t>(len) - len);  // the last tile's padding, zeroed
    DataCopyPad(x, xGm_[first], DataCopyExtParams(1, len * sizeof(int16_t), 0, 0, 0),
                DataCopyPadExtParams<int16_t>(true, 0, pad, 0));
    inQ_.EnQue(x);
  }

  __aicore__ inline void Compute(uint32_t len) {
    LocalTensor<int16_t> x = inQ_.DeQue<int16_t>();
    LocalTensor<int16_t> y = outQ_.AllocTensor<int16_t>();
    DataCopy(y, x, PaddedLen<int16_t>(len));  // a real kernel computes here
    outQ_.EnQue(y);
    inQ_.FreeTensor(x);
  }

  __aicore__ inline void CopyOut(int64_t first, uint32_t len) {
    LocalTensor<int16_t> y = outQ_.DeQue<int16_t>();
    DataCopyPad(yGm_[first], y, DataCopyExtParams(1, len * sizeof(int16_t), 0, 0, 0));
    outQ_.FreeTensor(y);
  }

  StreamCopyTilingData t_;
  GlobalTensor<int16_t> xGm_, yGm_;
  TQue<QuePosition::VECIN, STREAM_COPY_MAX_BUFFERS> inQ_;
  TQue<QuePosition::VECOUT, STREAM_COPY_MAX_BUFFERS> outQ_;
};

extern "C" __global__ __aicore__ void stream_copy(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StreamCopyTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  TPipe pipe;
  KernelStreamCopy op;
  op.Init(x, y, tilingData, &pipe);
  op.Process();
}
