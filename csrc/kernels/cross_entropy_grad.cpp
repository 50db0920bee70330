// Cross-entropy backward from the forward's log_prob [N, C] (torch_npu's npu_cross_entropy_loss_backward), one row
// at a time in chunks, fp32 inside: with p = exp(log_prob) and the row's coefficients (k, a, b) from rowCoef [3, N],
//   x_grad = p * k - a * onehot(target) - b * w      (w = weight, or 1 without one)
// where the binding folded the reduction, grad_loss, the class weight, label smoothing and the z-loss into them
// (cross_entropy_ops.cpp, CrossEntropyGradCoefficients):
//   a = g (1 - ls) w[t] / D,  b = g ls / (C D),  k = a + b sum_c w[c] + 2 s lse (g + g_z) / D_z
// (D, D_z: the weight sum and the count of counted rows for 'mean', else 1; all three 0 for an ignored row).
#include "cross_entropy_common.h"

using namespace AscendC;

template <typename T>
class KernelCrossEntropyGrad {
 public:
  __aicore__ inline KernelCrossEntropyGrad() {}

  __aicore__ inline void Init(GM_ADDR logProb, GM_ADDR target, GM_ADDR weight, GM_ADDR rowCoef, GM_ADDR xGrad,
                              const CrossEntropyTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    logProbGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(logProb), t_.rows * t_.cols);
    gradGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(xGrad), t_.rows * t_.cols);
    targetGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(target), t_.rows);
    coefGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowCoef), 3 * t_.rows);
    if (t_.hasWeight) weightGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(weight), t_.cols);
    const CrossEntropyUb ub = CrossEntropyBuffers(t_.chunkElems, sizeof(T), t_.weightChunks != 0);
    pipe->InitBuffer(inLp_, kCrossEntropyBufferNum, ub.tile);
    pipe->InitBuffer(outGrad_, kCrossEntropyBufferNum, ub.tile);
    if constexpr (sizeof(T) != sizeof(float)) pipe->InitBuffer(wideBuf_, ub.widened);
    pipe->InitBuffer(workBuf_, ub.work);
    if (t_.weightChunks) pipe->InitBuffer(weightBuf_, ub.weight);
  }

  // The op package's coefficients: rowCoef holds (a D, b D, z D_z) (z: the lse term of k) per row and the kernel
  // divides (csrc/kernels/op_package/cross_entropy/cross_entropy_phases.h).
  __aicore__ inline void SetScales(float invD, float invDz, float weightSum) {
    scaled_ = true;
    invD_ = invD;
    invDz_ = invDz;
    weightSum_ = weightSum;
  }

  __aicore__ inline void Process() {
    int64_t begin = 0, count = 0;
    BlockTaskRange(t_.rowsPerBlock, t_.rowsRemainder, begin, count);
    for (int64_t row = begin; row < begin + count; ++row) Row(row);
  }

 private:
  __aicore__ inline void Row(int64_t row) {
    const float c0 = coefGm_.GetValue(row), c1 = coefGm_.GetValue(t_.rows + row);
    const float c2 = coefGm_.GetValue(2 * t_.rows + row);
    // direct: (k, a, b); the op package's: (a D, b D, z D_z), divided here
    const float a = scaled_ ? c0 * invD_ : c1;
    const float b = scaled_ ? c1 * invD_ : c2;
    const float k = scaled_ ? a + b * weightSum_ + c2 * invDz_ : c0;
    const int64_t target = targetGm_.GetValue(row);
    LocalTensor<float> g = workBuf_.Get<float>();
    LocalTensor<float> wide;
    if constexpr (sizeof(T) != sizeof(float)) wide = wideBuf_.Get<float>();
    for (uint32_t c = 0; c < t_.chunkCount; ++c) {
      const uint32_t n = CrossEntropyChunkLen(t_, c);
      const int64_t c0 = int64_t(c) * t_.chunkCols;
      LocalTensor<T> lp = inLp_.AllocTensor<T>();
      CrossEntropyLoad(lp, logProbGm_, row * t_.cols + c0, n);
      inLp_.EnQue(lp);
      lp = inLp_.DeQue<T>();
      LocalTensor<float> lpf = CrossEntropyWiden(lp, wide, n);
      // g = exp(log_prob) * k
      Exp(g, lpf, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      inLp_.FreeTensor(lp);
      Muls(g, g, k, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      // g -= b * w (label smoothing)
      if (b != 0.0f) SubtractSmoothing(g, b, c0, n);
      // g[t] -= a (the target's one-hot), on the scalar unit
      if (a != 0.0f && target >= c0 && target < c0 + n) {
        const uint32_t at = static_cast<uint32_t>(target - c0);
        g.SetValue(at, g.GetValue(at) - a);
      }
      // one rounding to T (fp32: a copy into the output chunk, which the scalar write above must not touch)
      LocalTensor<T> out = outGrad_.AllocTensor<T>();
      if constexpr (sizeof(T) == sizeof(float)) {
        Muls(out, g, 1.0f, static_cast<int32_t>(n));
      } else {
        Cast(out, g, RoundMode::CAST_RINT, n);
      }
      PipeBarrier<PIPE_V>();
      outGrad_.EnQue(out);
      out = outGrad_.DeQue<T>();
      CrossEntropyStore(gradGm_, row * t_.cols + c0, out, n);
      outGrad_.FreeTensor(out);
    }
  }

  __aicore__ inline void SubtractSmoothing(const LocalTensor<float>& g, float b, int64_t c0, uint32_t n) {
    if (!t_.weightChunks) {
      Adds(g, g, -b, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      return;
    }
    LocalTensor<float> w = weightBuf_.Get<float>();
    CrossEntropyLoad(w, weightGm_, c0, n);
    SyncPipes<HardEvent::MTE2_V>();
    Muls(w, w, -b, static_cast<int32_t>(n));
    PipeBarrier<PIPE_V>();
    Add(g, g, w, static_cast<int32_t>(n));
    PipeBarrier<PIPE_V>();
    SyncPipes<HardEvent::V_MTE2>();  // the next chunk's weights land in w
  }

  CrossEntropyTilingData t_;
  bool scaled_ = false;
  float invD_ = 1.0f, invDz_ = 1.0f, weightSum_ = 0.0f;
  GlobalTensor<T> logProbGm_, gradGm_;
  GlobalTensor<int64_t> targetGm_;
  GlobalTensor<float> weightGm_, coefGm_;
  TQue<QuePosition::VECIN, kCrossEntropyBufferNum> inLp_;
  TQue<QuePosition::VECOUT, kCrossEntropyBufferNum> outGrad_;
  TBuf<TPosition::VECCALC> wideBuf_, workBuf_, weightBuf_;
};

// The backward row kernel (also the op package's second phase, csrc/kernels/op_package/cross_entropy/).
template <typename T>
__aicore__ inline void ProcessCrossEntropyGrad(GM_ADDR logProb, GM_ADDR target, GM_ADDR weight, GM_ADDR rowCoef,
                                               GM_ADDR xGrad, const CrossEntropyTilingData& tilingData, TPipe* pipe) {
  KernelCrossEntropyGrad<T> op;
  op.Init(logProb, target, weight, rowCoef, xGrad, tilingData, pipe);
  op.Process();
}

template <typename T>
__aicore__ inline void RunCrossEntropyGrad(GM_ADDR logProb, GM_ADDR target, GM_ADDR weight, GM_ADDR rowCoef,
                                           GM_ADDR xGrad, GM_ADDR tiling) {
  CrossEntropyTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  TPipe pipe;
  ProcessCrossEntropyGrad<T>(logProb, target, weight, rowCoef, xGrad, tilingData, &pipe);
}

// One entry per dtype (CROSS_ENTROPY_LOSS_GRAD_DTYPES, tiling/cross_entropy_tiling_data.h).
#define CROSS_ENTROPY_LOSS_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(CROSS_ENTROPY_LOSS_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                              \
    RunCrossEntropyGrad<T>(logProb, target, weight, rowCoef, xGrad, tiling);                     \
  }
CROSS_ENTROPY_LOSS_GRAD_DTYPES(CROSS_ENTROPY_LOSS_GRAD_ENTRY, cross_entropy_loss_grad)
#undef CROSS_ENTROPY_LOSS_GRAD_ENTRY
