// Cross-entropy forward on logits x [N, C] (torch_npu's npu_cross_entropy_loss), one row at a time, each row in
// chunks of chunkCols columns (cross_entropy_tiling_data.h), all arithmetic in fp32:
//   pass 1  online max and sum of exp:  m = max(m, max_chunk x), s = s * exp(m_old - m) + sum_chunk exp(x - m);
//           lse = m + ln(s) (never exp of a large x: no overflow whatever the logits' magnitude)
//   pass 2  log_prob = (x - m) - ln(s), written in x's dtype (rounded once), and from the fp32 values:
//           nll = -log_prob[t], smooth = -sum_c w[c] log_prob[c] (label smoothing only)
// Per row the kernel writes (loss term, w[t], lse, 1) to rowStats [N, 4] (an ignored row: 0, 0, lse, 0), with
// loss term = (1 - ls) * w[t] * nll + ls / C * smooth, as torch.nn.functional.cross_entropy weighs both parts.
// The binding reduces rowStats over rows and adds the z-loss (an [N] vector). A row that fits one chunk is read
// from GM once; longer rows twice.
#include "cross_entropy_common.h"

using namespace AscendC;

template <typename T>
class KernelCrossEntropy {
 public:
  __aicore__ inline KernelCrossEntropy() {}

  __aicore__ inline void Init(GM_ADDR input, GM_ADDR target, GM_ADDR weight, GM_ADDR logProb, GM_ADDR rowStats,
                              const CrossEntropyTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(input), t_.rows * t_.cols);
    logProbGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(logProb), t_.rows * t_.cols);
    targetGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(target), t_.rows);
    statsGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowStats), t_.rows * kCrossEntropyStats);
    if (t_.hasWeight) weightGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(weight), t_.cols);
    const CrossEntropyUb ub = CrossEntropyBuffers(t_.chunkElems, sizeof(T), t_.weightChunks != 0);
    pipe->InitBuffer(inX_, kCrossEntropyBufferNum, ub.tile);
    pipe->InitBuffer(outX_, kCrossEntropyBufferNum, ub.tile);
    if constexpr (sizeof(T) != sizeof(float)) pipe->InitBuffer(wideBuf_, ub.widened);
    pipe->InitBuffer(workBuf_, ub.work);
    if (t_.weightChunks) pipe->InitBuffer(weightBuf_, ub.weight);
    pipe->InitBuffer(tmpBuf_, ub.reduceTmp);
    pipe->InitBuffer(scalarBuf_, ub.scalars);
    pipe->InitBuffer(stageBuf_, ub.stage);
  }

  __aicore__ inline void Process() {
    int64_t begin = 0, count = 0;
    BlockTaskRange(t_.rowsPerBlock, t_.rowsRemainder, begin, count);
    LocalTensor<float> stage = stageBuf_.Get<float>();
    uint32_t staged = 0;
    for (int64_t row = begin; row < begin + count; ++row) {
      Row(row, stage, staged);
      if (++staged == kCrossEntropyStageRows || row + 1 == begin + count) {
        // rows [row + 1 - staged, row] go out in one copy; the scalar unit wrote them
        SyncPipes<HardEvent::S_MTE3>();
        DataCopyPad(statsGm_[(row + 1 - staged) * kCrossEntropyStats], stage,
                    DataCopyExtParams(1, staged * kCrossEntropyStats * 4, 0, 0, 0));
        SyncPipes<HardEvent::MTE3_S>();  // before the stage is written again
        staged = 0;
      }
    }
  }

 private:
  // exp / ln of one value through the vector unit (the scalar unit has neither).
  __aicore__ inline float ScalarExp(float v) {
    LocalTensor<float> s = scalarBuf_.Get<float>()[24];
    s.SetValue(0, v);
    Exp(s, s, 1);
    return s.GetValue(0);
  }
  __aicore__ inline float ScalarLn(float v) {
    LocalTensor<float> s = scalarBuf_.Get<float>()[24];
    s.SetValue(0, v);
    Ln(s, s, 1);
    return s.GetValue(0);
  }

  __aicore__ inline LocalTensor<T> LoadChunk(int64_t row, uint32_t k, uint32_t n) {
    LocalTensor<T> x = inX_.AllocTensor<T>();
    CrossEntropyLoad(x, xGm_, row * t_.cols + int64_t(k) * t_.chunkCols, n);
    inX_.EnQue(x);
    return inX_.DeQue<T>();
  }

  __aicore__ inline void Row(int64_t row, const LocalTensor<float>& stage, uint32_t slot) {
    const int64_t target = targetGm_.GetValue(row);
    const bool ignored = target == t_.ignoreIndex;
    const bool valid = !ignored && target >= 0 && target < t_.cols;
    const bool single = t_.chunkCount == 1;  // the chunk stays in UB from pass 1 to pass 2
    LocalTensor<float> work = workBuf_.Get<float>();
    LocalTensor<float> tmp = tmpBuf_.Get<float>();
    LocalTensor<float> scalars = scalarBuf_.Get<float>();
    LocalTensor<float> wide;
    if constexpr (sizeof(T) != sizeof(float)) wide = wideBuf_.Get<float>();

    // pass 1: running max m and sum s of exp(x - m)
    float m = 0.0f, s = 0.0f;
    LocalTensor<T> kept;
    for (uint32_t k = 0; k < t_.chunkCount; ++k) {
      const uint32_t n = CrossEntropyChunkLen(t_, k);
      LocalTensor<T> x = LoadChunk(row, k, n);
      LocalTensor<float> xf = CrossEntropyWiden(x, wide, n);
      ReduceMax(scalars, xf, tmp, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      const float chunkMax = scalars.GetValue(0);
      const float mNew = k == 0 || chunkMax > m ? chunkMax : m;
      Adds(work, xf, -mNew, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      Exp(work, work, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      CrossEntropyFoldSum(scalars[8], work, tmp, n);
      const float chunkSum = scalars.GetValue(8);
      // rescale the sum so far to the new max (exp(0) = 1 when the max stays)
      s = k == 0 ? chunkSum : (mNew == m ? s : s * ScalarExp(m - mNew)) + chunkSum;
      m = mNew;
      if (single) kept = x;
      else inX_.FreeTensor(x);
    }
    // log_prob = (x - m) - ln(s), as log_softmax forms it: x - m is exact near the max (Sterbenz) however large the
    // logits, where x - lse would carry lse's rounding (an ulp of |lse|) into every value
    const float lnS = ScalarLn(s);
    const float lse = m + lnS;

    // pass 2: log_prob in fp32 (rounded once to T), the target's and the smoothing sum
    float nll = 0.0f, smooth = 0.0f;
    for (uint32_t k = 0; k < t_.chunkCount; ++k) {
      const uint32_t n = CrossEntropyChunkLen(t_, k);
      const int64_t c0 = int64_t(k) * t_.chunkCols;
      LocalTensor<T> x = single ? kept : LoadChunk(row, k, n);
      LocalTensor<float> xf = CrossEntropyWiden(x, wide, n);
      LocalTensor<T> out = outX_.AllocTensor<T>();
      // fp32: log_prob is computed into the output chunk itself
      LocalTensor<float> lp = sizeof(T) == sizeof(float) ? out.template ReinterpretCast<float>() : work;
      Adds(lp, xf, -m, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      Adds(lp, lp, -lnS, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      inX_.FreeTensor(x);
      if (valid && target >= c0 && target < c0 + n) nll = -lp.GetValue(static_cast<uint32_t>(target - c0));
      if constexpr (sizeof(T) != sizeof(float)) {
        Cast(out, lp, RoundMode::CAST_RINT, n);
        PipeBarrier<PIPE_V>();
      }
      if (valid && t_.labelSmoothing > 0.0f) smooth -= ChunkSmoothSum(lp, work, tmp, scalars, c0, n);
      outX_.EnQue(out);
      out = outX_.DeQue<T>();
      CrossEntropyStore(logProbGm_, row * t_.cols + c0, out, n);
      outX_.FreeTensor(out);
    }

    const uint32_t at = slot * kCrossEntropyStats;
    if (ignored) {
      stage.SetValue(at + kCrossEntropyStatLoss, 0.0f);
      stage.SetValue(at + kCrossEntropyStatWeight, 0.0f);
      stage.SetValue(at + kCrossEntropyStatCount, 0.0f);
    } else if (!valid) {  // a target outside [0, C): poisoned, never read out of bounds
      const float nan = __builtin_nanf("");
      stage.SetValue(at + kCrossEntropyStatLoss, nan);
      stage.SetValue(at + kCrossEntropyStatWeight, nan);
      stage.SetValue(at + kCrossEntropyStatCount, nan);
    } else {
      const float w = t_.hasWeight ? weightGm_.GetValue(target) : 1.0f;
      const float ls = t_.labelSmoothing;
      float loss = (1.0f - ls) * w * nll;
      if (ls > 0.0f) loss += ls / static_cast<float>(t_.cols) * smooth;
      stage.SetValue(at + kCrossEntropyStatLoss, loss);
      stage.SetValue(at + kCrossEntropyStatWeight, w);
      stage.SetValue(at + kCrossEntropyStatCount, 1.0f);
    }
    stage.SetValue(at + kCrossEntropyStatLse, lse);
  }

  // sum_c w[c] log_prob[c] over the chunk (w = 1 without a weight); `work` holds the sum's terms (for 16-bit T it is
  // lp itself, already rounded out).
  __aicore__ inline float ChunkSmoothSum(const LocalTensor<float>& lp, const LocalTensor<float>& work,
                                         const LocalTensor<float>& tmp, const LocalTensor<float>& scalars, int64_t c0,
                                         uint32_t n) {
    if (t_.weightChunks) {
      LocalTensor<float> w = weightBuf_.Get<float>();
      CrossEntropyLoad(w, weightGm_, c0, n);
      SyncPipes<HardEvent::MTE2_V>();
      Mul(work, lp, w, static_cast<int32_t>(n));
      PipeBarrier<PIPE_V>();
      SyncPipes<HardEvent::V_MTE2>();  // the next chunk's weights land in w
    } else if constexpr (sizeof(T) == sizeof(float)) {
      Muls(work, lp, 1.0f, static_cast<int32_t>(n));  // the fold overwrites its source: not the output chunk
      PipeBarrier<PIPE_V>();
    }
    CrossEntropyFoldSum(scalars[16], work, tmp, n);
    return scalars.GetValue(16);
  }

  CrossEntropyTilingData t_;
  GlobalTensor<T> xGm_, logProbGm_;
  GlobalTensor<int64_t> targetGm_;
  GlobalTensor<float> weightGm_, statsGm_;
  TQue<QuePosition::VECIN, kCrossEntropyBufferNum> inX_;
  TQue<QuePosition::VECOUT, kCrossEntropyBufferNum> outX_;
  TBuf<TPosition::VECCALC> wideBuf_, workBuf_, weightBuf_, tmpBuf_, scalarBuf_, stageBuf_;
};

// The forward row kernel (also the op package's first phase, csrc/kernels/op_package/cross_entropy/).
template <typename T>
__aicore__ inline void ProcessCrossEntropy(GM_ADDR input, GM_ADDR target, GM_ADDR weight, GM_ADDR logProb,
                                           GM_ADDR rowStats, const CrossEntropyTilingData& tilingData, TPipe* pipe) {
  KernelCrossEntropy<T> op;
  op.Init(input, target, weight, logProb, rowStats, tilingData, pipe);
  op.Process();
}

template <typename T>
__aicore__ inline void RunCrossEntropy(GM_ADDR input, GM_ADDR target, GM_ADDR weight, GM_ADDR logProb, GM_ADDR rowStats,
                                       GM_ADDR tiling) {
  CrossEntropyTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  TPipe pipe;
  ProcessCrossEntropy<T>(input, target, weight, logProb, rowStats, tilingData, &pipe);
}

// One entry per dtype (CROSS_ENTROPY_LOSS_DTYPES, tiling/cross_entropy_tiling_data.h).
#define CROSS_ENTROPY_LOSS_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(CROSS_ENTROPY_LOSS_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                         \
    RunCrossEntropy<T>(input, target, weight, logProb, rowStats, tiling);                   \
  }
CROSS_ENTROPY_LOSS_DTYPES(CROSS_ENTROPY_LOSS_ENTRY, cross_entropy_loss)
#undef CROSS_ENTROPY_LOSS_ENTRY
