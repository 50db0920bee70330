// AdamW in one pass (torch.optim.AdamW's update, decoupled weight decay), per element, all in fp32:
//   p = p * (1 - lr * wd);  g = -g when maximizing
//   m = m + (1 - beta1) * (g - m), or from 1 - beta1 >= 0.5 on g - beta1 * (g - m)   (torch's lerp)
//   v = beta2 * v + (1 - beta2) * g * g;  amsgrad: vmax = max(vmax, v), used below in v's place
//   p = p + (-lr / (1 - beta1^step)) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
// Each element's param, grad, m and v (and vmax) are read once and param, m, v (and vmax) written once, in place.
// The scalars come formed on the host in double (optimizer_tiling.cpp). fp16 / bf16 parameters and grads are
// widened to fp32 (CAST_NONE) and the parameter rounded once (CAST_RINT); the states are fp32. With an fp32 master
// copy (16-bit var; apex FusedAdam's master_weights) the master is read in var's place, updated in fp32 and
// written, and var only written: the master rounded once (var is not read).
// Two entries share the update: apply_adam_w (one tensor, its arguments) and foreach_adam_w (a table of tensors
// in GM, tiling/optimizer_tiling_data.h), whose blocks take runs of elements across tensor boundaries.
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "optimizer_buffers.h"
#include "optimizer_tiling_data.h"

using namespace AscendC;

// One tensor's GM: the parameter, its states and grad (maxV null without amsgrad).
struct AdamWTensor {
  GM_ADDR var;  // GM_ADDR is `__gm__ uint8_t*`: one declarator per member
  GM_ADDR m;
  GM_ADDR v;
  GM_ADDR grad;
  GM_ADDR maxV;
  GM_ADDR master;  // null without a master copy
};

template <typename T>
class KernelAdamW {
 public:
  __aicore__ inline KernelAdamW() {}

  __aicore__ inline void Init(const AdamWTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    master_ = sizeof(T) != sizeof(float) && t_.master != 0;  // the host gives a master only to a 16-bit var
    masterAt_ = (t_.amsgrad != 0 ? 3 : 2) * t_.tileElems;    // its slot in the states' tiles, after m, v (, max)
    const AdamWUb ub = AdamWBuffers(t_.tileElems, sizeof(T), t_.amsgrad != 0, master_);  // the tiling's plan
    if (!master_) pipe->InitBuffer(varIn_, kAdamWBufferNum, ub.param);
    pipe->InitBuffer(gradIn_, kAdamWBufferNum, ub.param);
    // m, v (and the maximum) share one queue, a tile each side by side: A2 has 8 hand-off event ids per position
    pipe->InitBuffer(statesIn_, kAdamWBufferNum, ub.states * ub.state);
    pipe->InitBuffer(varOut_, kAdamWBufferNum, ub.param);
    pipe->InitBuffer(statesOut_, kAdamWBufferNum, ub.states * ub.state);
    if constexpr (sizeof(T) != sizeof(float)) {
      if (!master_) pipe->InitBuffer(varWide_, ub.state);
      pipe->InitBuffer(gradWide_, ub.state);
    }
    pipe->InitBuffer(scratch1_, ub.state);
    pipe->InitBuffer(scratch2_, ub.state);
  }

  // Updates elements [first, first + count) of one tensor, a tile at a time.
  __aicore__ inline void Update(const AdamWTensor& gm, int64_t first, int64_t count) {
    varGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gm.var) + first, count);
    gradGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gm.grad) + first, count);
    mGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gm.m) + first, count);
    vGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gm.v) + first, count);
    if (t_.amsgrad != 0) maxGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gm.maxV) + first, count);
    if (master_) masterGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gm.master) + first, count);
    for (int64_t done = 0; done < count; done += t_.tileElems) {
      const uint32_t n = static_cast<uint32_t>(count - done < t_.tileElems ? count - done : t_.tileElems);
      CopyIn(done, n);
      Compute(n);
      CopyOut(done, n);
    }
  }

 private:
  template <typename U>
  __aicore__ inline void Load(LocalTensor<U> dst, GlobalTensor<U>& gm, int64_t at, uint32_t n) {
    DataCopyPad(dst, gm[at], DataCopyExtParams(1, n * sizeof(U), 0, 0, 0), DataCopyPadExtParams<U>());
  }
  template <typename U>
  __aicore__ inline void Store(GlobalTensor<U>& gm, LocalTensor<U> src, int64_t at, uint32_t n) {
    DataCopyPad(gm[at], src, DataCopyExtParams(1, n * sizeof(U), 0, 0, 0));
  }

  __aicore__ inline void CopyIn(int64_t at, uint32_t n) {
    LocalTensor<T> grad = gradIn_.AllocTensor<T>();
    LocalTensor<float> states = statesIn_.AllocTensor<float>();
    if (master_) {
      Load(states[masterAt_], masterGm_, at, n);
    } else {
      LocalTensor<T> var = varIn_.AllocTensor<T>();
      Load(var, varGm_, at, n);
      varIn_.EnQue(var);
    }
    Load(grad, gradGm_, at, n);
    Load(states, mGm_, at, n);
    Load(states[t_.tileElems], vGm_, at, n);
    if (t_.amsgrad != 0) Load(states[2 * t_.tileElems], maxGm_, at, n);
    gradIn_.EnQue(grad);
    statesIn_.EnQue(states);
  }

  __aicore__ inline void Compute(uint32_t count) {
    const int32_t n = static_cast<int32_t>(count);
    LocalTensor<T> varIn;
    if (!master_) varIn = varIn_.DeQue<T>();
    LocalTensor<T> gradIn = gradIn_.DeQue<T>();
    LocalTensor<float> states = statesIn_.DeQue<float>();
    LocalTensor<T> varOut = varOut_.AllocTensor<T>();
    LocalTensor<float> statesOut = statesOut_.AllocTensor<float>();
    LocalTensor<float> m = states, v = states[t_.tileElems];
    LocalTensor<float> mOut = statesOut, vOut = statesOut[t_.tileElems];
    LocalTensor<float> s1 = scratch1_.Get<float>();
    LocalTensor<float> s2 = scratch2_.Get<float>();
    // p: the fp32 parameter, decayed and stepped where it lies (fp32: straight into the output tile)
    LocalTensor<float> p, g;
    if constexpr (sizeof(T) == sizeof(float)) {
      p = varOut;
      g = gradIn;
      Muls(p, varIn, t_.decay, n);
    } else if (master_) {  // the master decayed and stepped in its out tile, var its rounding
      p = statesOut[masterAt_];
      g = gradWide_.Get<float>();
      Cast(g, gradIn, RoundMode::CAST_NONE, count);
      Muls(p, states[masterAt_], t_.decay, n);
    } else {
      p = varWide_.Get<float>();
      g = gradWide_.Get<float>();
      Cast(p, varIn, RoundMode::CAST_NONE, count);
      Cast(g, gradIn, RoundMode::CAST_NONE, count);
      PipeBarrier<PIPE_V>();
      Muls(p, p, t_.decay, n);
    }
    if (t_.gradSign < 0.0f) {  // maximize
      PipeBarrier<PIPE_V>();
      Muls(g, g, t_.gradSign, n);
    }
    PipeBarrier<PIPE_V>();
    // m as torch's lerp forms it: m + w (g - m) for w = 1 - beta1 < 0.5, else g - (1 - w)(g - m), so that beta1 = 0
    // gives m = g exactly;  s2 = g * g
    const bool small = t_.weight1 < 0.5f;
    Sub(s1, g, m, n);
    Mul(s2, g, g, n);
    Muls(vOut, v, t_.beta2, n);
    PipeBarrier<PIPE_V>();
    Muls(s1, s1, small ? t_.weight1 : t_.weight1 - 1.0f, n);
    Muls(s2, s2, t_.squareScale, n);
    PipeBarrier<PIPE_V>();
    Add(mOut, small ? m : g, s1, n);
    Add(vOut, vOut, s2, n);
    PipeBarrier<PIPE_V>();
    if (t_.amsgrad != 0) {
      LocalTensor<float> maxOut = statesOut[2 * t_.tileElems];
      Max(maxOut, states[2 * t_.tileElems], vOut, n);
      PipeBarrier<PIPE_V>();
      Sqrt(s2, maxOut, n);
    } else {
      Sqrt(s2, vOut, n);
    }
    // denom = sqrt(v) / sqrt(1 - beta2^step) + eps;  p += -stepSize * m / denom
    PipeBarrier<PIPE_V>();
    Muls(s2, s2, t_.rsqrtCorrection2, n);
    PipeBarrier<PIPE_V>();
    Adds(s2, s2, t_.eps, n);
    PipeBarrier<PIPE_V>();
    Div(s1, mOut, s2, n);
    PipeBarrier<PIPE_V>();
    Muls(s1, s1, t_.negStepSize, n);
    PipeBarrier<PIPE_V>();
    Add(p, p, s1, n);
    if constexpr (sizeof(T) != sizeof(float)) {
      PipeBarrier<PIPE_V>();
      Cast(varOut, p, RoundMode::CAST_RINT, count);
    }
    if (!master_) varIn_.FreeTensor(varIn);
    gradIn_.FreeTensor(gradIn);
    statesIn_.FreeTensor(states);
    varOut_.EnQue(varOut);
    statesOut_.EnQue(statesOut);
  }

  __aicore__ inline void CopyOut(int64_t at, uint32_t n) {
    LocalTensor<T> var = varOut_.DeQue<T>();
    LocalTensor<float> states = statesOut_.DeQue<float>();
    Store(varGm_, var, at, n);
    Store(mGm_, states, at, n);
    Store(vGm_, states[t_.tileElems], at, n);
    if (t_.amsgrad != 0) Store(maxGm_, states[2 * t_.tileElems], at, n);
    if (master_) Store(masterGm_, states[masterAt_], at, n);
    varOut_.FreeTensor(var);
    statesOut_.FreeTensor(states);
  }

  AdamWTilingData t_;
  bool master_ = false;
  uint32_t masterAt_ = 0;
  TQue<TPosition::VECIN, kAdamWBufferNum> varIn_, gradIn_, statesIn_;
  TQue<TPosition::VECOUT, kAdamWBufferNum> varOut_, statesOut_;
  TBuf<TPosition::VECCALC> varWide_, gradWide_, scratch1_, scratch2_;
  GlobalTensor<T> varGm_, gradGm_;
  GlobalTensor<float> mGm_, vGm_, maxGm_, masterGm_;
};

// The block's run of the flat element range: [begin, end).
__aicore__ inline void AdamWBlockRange(const AdamWTilingData& t, int64_t& begin, int64_t& end) {
  begin = GetBlockIdx() * t.blockElems;
  end = begin + t.blockElems < t.totalElems ? begin + t.blockElems : t.totalElems;
}

template <typename T>
__aicore__ inline void RunApplyAdamW(const AdamWTensor& gm, GM_ADDR tiling) {
  AdamWTilingData t;
  CopyTiling(&t, tiling);
  int64_t begin = 0, end = 0;
  AdamWBlockRange(t, begin, end);
  if (begin >= end) return;
  TPipe pipe;
  KernelAdamW<T> op;
  op.Init(t, &pipe);
  op.Update(gm, begin, end - begin);
}

// The multi-tensor form: the rows of the tensor table whose elements meet the block's run, each over the part
// that does (a tensor may be split between blocks, a block may span many tensors).
template <typename T>
__aicore__ inline void RunForeachAdamW(GM_ADDR table, GM_ADDR tiling) {
  AdamWTilingData t;
  CopyTiling(&t, tiling);
  int64_t begin = 0, end = 0;
  AdamWBlockRange(t, begin, end);
  if (begin >= end) return;
  GlobalTensor<int64_t> rows;
  rows.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(table), t.tensorCount * ADAM_W_TABLE_COLUMNS);
  TPipe pipe;
  KernelAdamW<T> op;
  op.Init(t, &pipe);
  for (int64_t k = 0; k < t.tensorCount; ++k) {
    const int64_t at = k * ADAM_W_TABLE_COLUMNS;
    const int64_t start = rows.GetValue(at + ADAM_W_TABLE_START);
    const int64_t stop =
        k + 1 < t.tensorCount ? rows.GetValue(at + ADAM_W_TABLE_COLUMNS + ADAM_W_TABLE_START) : t.totalElems;
    if (stop <= begin) continue;
    if (start >= end) break;
    const int64_t lo = start > begin ? start : begin;
    const int64_t hi = stop < end ? stop : end;
    if (lo >= hi) continue;  // an empty tensor
    const auto addr = [&](uint32_t column) {
      return reinterpret_cast<GM_ADDR>(static_cast<uint64_t>(rows.GetValue(at + column)));
    };
    const AdamWTensor gm{addr(ADAM_W_TABLE_VAR),  addr(ADAM_W_TABLE_M),   addr(ADAM_W_TABLE_V),
                         addr(ADAM_W_TABLE_GRAD), addr(ADAM_W_TABLE_MAX), addr(ADAM_W_TABLE_MASTER)};
    op.Update(gm, lo - start, hi - lo);
  }
}

// One entry per parameter dtype (APPLY_ADAM_W_DTYPES, tiling/optimizer_tiling_data.h), for each form.
#define APPLY_ADAM_W_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(APPLY_ADAM_W_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                   \
    RunApplyAdamW<T>(AdamWTensor{var, m, v, grad, max_grad_norm, nullptr}, tiling);   \
  }
#define FOREACH_ADAM_W_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(FOREACH_ADAM_W_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                     \
    RunForeachAdamW<T>(table, tiling);                                                  \
  }
APPLY_ADAM_W_DTYPES(APPLY_ADAM_W_ENTRY, apply_adam_w)
APPLY_ADAM_W_DTYPES(FOREACH_ADAM_W_ENTRY, foreach_adam_w)
#undef APPLY_ADAM_W_ENTRY
#undef FOREACH_ADAM_W_ENTRY
