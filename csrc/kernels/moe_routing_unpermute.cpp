// MoE token unpermute (npu_moe_token_unpermute) and its gradient, vector kernels over tokens:
//   forward  out[t] = sum_k p[t,k] * permuted[s[t*K+k]]          (p = 1 without probs)
//   grad     dpermuted[s[t*K+k]] = p[t,k] * dout[t]
//            dprobs[t,k] = sum_h permuted[s[t*K+k], h] * dout[t, h]
// s = sorted_indices; entries at or past the permuted rows (capacity drops) contribute nothing.
// Rows are processed colChunk elements at a time (any hidden size); everything accumulates in
// fp32 and is rounded once (CAST_RINT).
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "moe_routing_tiling_data.h"

using namespace AscendC;

template <typename T>
__aicore__ inline void WidenRow(LocalTensor<float>& dst, LocalTensor<T>& src, uint32_t n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    DataCopy(dst, src.template ReinterpretCast<float>(), PaddedLen<float>(n));
  } else {
    Cast(dst, src, RoundMode::CAST_NONE, n);
  }
}

template <typename T>
__aicore__ inline void NarrowRow(LocalTensor<T>& dst, LocalTensor<float>& src, uint32_t n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    DataCopy(dst.template ReinterpretCast<float>(), src, PaddedLen<float>(n));
  } else {
    Cast(dst, src, RoundMode::CAST_RINT, n);
  }
}

// The row as fp32: an fp32 row is used in place (no UB copy), fp16 / bf16 rows are widened into `wide`.
template <typename T>
__aicore__ inline LocalTensor<float> AsFloat(LocalTensor<float>& wide, LocalTensor<T>& src, uint32_t n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return src.template ReinterpretCast<float>();
  } else {
    Cast(wide, src, RoundMode::CAST_NONE, n);
    return wide;
  }
}

// Per-token routing: sorted_indices[t*K .. t*K+K) and probs as fp32, in UB.
template <typename P>
class TokenRoutes {
 public:
  __aicore__ inline void Init(TPipe& pipe, GM_ADDR sortedIndices, GM_ADDR probs, const MoeRoutingTilingData& t) {
    k_ = static_cast<uint32_t>(t.topK);
    hasProbs_ = t.hasProbs != 0;
    sidxGm_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(sortedIndices), t.sortLen);
    pipe.InitBuffer(sidxBuf_, MOE_MAX_TOPK * sizeof(int32_t));
    pipe.InitBuffer(probRaw_, MOE_MAX_TOPK * sizeof(float));
    pipe.InitBuffer(probF_, MOE_MAX_TOPK * sizeof(float));
    if (hasProbs_) probsGm_.SetGlobalBuffer(reinterpret_cast<__gm__ P*>(probs), t.sortLen);
  }
  __aicore__ inline void Load(int64_t token) {
    sidx_ = sidxBuf_.Get<int32_t>();
    DataCopyPad(sidx_, sidxGm_[token * k_], DataCopyExtParams(1, k_ * 4, 0, 0, 0), DataCopyPadExtParams<int32_t>());
    prob_ = probF_.Get<float>();
    if (hasProbs_) {
      LocalTensor<P> raw = probRaw_.Get<P>();
      DataCopyPad(raw, probsGm_[token * k_], DataCopyExtParams(1, k_ * static_cast<uint32_t>(sizeof(P)), 0, 0, 0),
                  DataCopyPadExtParams<P>());
      SyncPipes<HardEvent::MTE2_V>();
      WidenRow(prob_, raw, k_);
      SyncPipes<HardEvent::V_S>();
    }
    SyncPipes<HardEvent::MTE2_S>();
  }
  __aicore__ inline int64_t Row(uint32_t k) const { return sidx_.GetValue(k); }
  __aicore__ inline float Prob(uint32_t k) const { return hasProbs_ ? prob_.GetValue(k) : 1.0f; }
  __aicore__ inline bool HasProbs() const { return hasProbs_; }

 private:
  uint32_t k_ = 0;
  bool hasProbs_ = false;
  GlobalTensor<int32_t> sidxGm_;
  GlobalTensor<P> probsGm_;
  TBuf<TPosition::VECCALC> sidxBuf_, probRaw_, probF_;
  LocalTensor<int32_t> sidx_;
  LocalTensor<float> prob_;
};

// What both kernels run a block on: its tokens [begin, begin + count), one pipe, the token routes and the row
// chunks' queues (two deep each way).
template <typename T, typename P>
struct UnpermuteBlock {
  // false: this block has no tokens (and nothing was set up)
  __aicore__ inline bool Init(GM_ADDR sortedIndices, GM_ADDR probs, const MoeRoutingTilingData& t) {
    BlockTaskRange(t.tasksPerBlock, t.tasksRemainder, begin, count);
    if (count <= 0) return false;
    routes.Init(pipe, sortedIndices, probs, t);
    pipe.InitBuffer(inQue, 2, t.colChunk * sizeof(T));
    pipe.InitBuffer(outQue, 2, t.colChunk * sizeof(T));
    return true;
  }
  // gm[first, first + n) through inQue, ready in UB (the caller frees it on inQue).
  __aicore__ inline LocalTensor<T> Load(const GlobalTensor<T>& gm, int64_t first, uint32_t n) {
    LocalTensor<T> in = inQue.template AllocTensor<T>();
    DataCopyPad(in, gm[first], DataCopyExtParams(1, n * static_cast<uint32_t>(sizeof(T)), 0, 0, 0),
                DataCopyPadExtParams<T>());
    inQue.EnQue(in);
    return inQue.template DeQue<T>();
  }
  int64_t begin = 0, count = 0;
  TPipe pipe;
  TokenRoutes<P> routes;
  TQue<TPosition::VECIN, 2> inQue;
  TQue<TPosition::VECOUT, 2> outQue;
};

template <typename T, typename P>
__aicore__ inline void Unpermute(GM_ADDR permuted, GM_ADDR sortedIndices, GM_ADDR probs, GM_ADDR out,
                                 const MoeRoutingTilingData& t) {
  UnpermuteBlock<T, P> blk;
  if (!blk.Init(sortedIndices, probs, t)) return;
  TBuf<TPosition::VECCALC> rowF, accF;
  blk.pipe.InitBuffer(rowF, t.colChunk * sizeof(float));
  blk.pipe.InitBuffer(accF, t.colChunk * sizeof(float));
  GlobalTensor<T> src, dst;
  src.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(permuted), t.numOut * t.hidden);
  dst.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out), t.tokens * t.hidden);
  LocalTensor<float> row = rowF.Get<float>(), acc = accF.Get<float>();
  for (int64_t token = blk.begin; token < blk.begin + blk.count; ++token) {
    blk.routes.Load(token);
    for (int64_t c = 0; c < t.hidden; c += t.colChunk) {
      const uint32_t n = static_cast<uint32_t>(t.hidden - c < t.colChunk ? t.hidden - c : t.colChunk);
      Duplicate(acc, 0.0f, static_cast<int32_t>(n));
      for (uint32_t k = 0; k < t.topK; ++k) {
        const int64_t j = blk.routes.Row(k);
        if (j < 0 || j >= t.numOut) continue;
        LocalTensor<T> in = blk.Load(src, j * t.hidden + c, n);
        LocalTensor<float> wide = AsFloat(row, in, n);
        if (blk.routes.HasProbs()) {
          Muls(row, wide, blk.routes.Prob(k), static_cast<int32_t>(n));
          wide = row;
        }
        Add(acc, acc, wide, static_cast<int32_t>(n));
        blk.inQue.FreeTensor(in);
      }
      LocalTensor<T> o = blk.outQue.template AllocTensor<T>();
      NarrowRow(o, acc, n);
      blk.outQue.EnQue(o);
      o = blk.outQue.template DeQue<T>();
      DataCopyPad(dst[token * t.hidden + c], o, DataCopyExtParams(1, n * static_cast<uint32_t>(sizeof(T)), 0, 0, 0));
      blk.outQue.FreeTensor(o);
    }
  }
}

template <typename T, typename P>
__aicore__ inline void UnpermuteGrad(GM_ADDR permuted, GM_ADDR dout, GM_ADDR sortedIndices, GM_ADDR probs,
                                     GM_ADDR dpermuted, GM_ADDR dprobs, const MoeRoutingTilingData& t) {
  UnpermuteBlock<T, P> blk;
  if (!blk.Init(sortedIndices, probs, t)) return;
  TBuf<TPosition::VECCALC> gradF, rowF, reduceTmp, sumBuf, dprobF, dprobOut;
  blk.pipe.InitBuffer(gradF, t.colChunk * sizeof(float));
  blk.pipe.InitBuffer(rowF, t.colChunk * sizeof(float));
  blk.pipe.InitBuffer(reduceTmp, t.colChunk * sizeof(float));
  blk.pipe.InitBuffer(sumBuf, 32);
  blk.pipe.InitBuffer(dprobF, MOE_MAX_TOPK * sizeof(float));
  blk.pipe.InitBuffer(dprobOut, MOE_MAX_TOPK * sizeof(float));
  GlobalTensor<T> permGm, doutGm, dpermGm;
  GlobalTensor<P> dprobGm;
  permGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(permuted), t.numOut * t.hidden);
  doutGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dout), t.tokens * t.hidden);
  dpermGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dpermuted), t.numOut * t.hidden);
  if (t.hasProbs) dprobGm.SetGlobalBuffer(reinterpret_cast<__gm__ P*>(dprobs), t.sortLen);
  LocalTensor<float> g = gradF.Get<float>(), row = rowF.Get<float>(), red = reduceTmp.Get<float>();
  LocalTensor<float> dp = dprobF.Get<float>(), sum = sumBuf.Get<float>();
  const uint32_t k = static_cast<uint32_t>(t.topK);
  for (int64_t token = blk.begin; token < blk.begin + blk.count; ++token) {
    blk.routes.Load(token);
    for (uint32_t q = 0; q < k; ++q) dp.SetValue(q, 0.0f);
    for (int64_t c = 0; c < t.hidden; c += t.colChunk) {
      const uint32_t n = static_cast<uint32_t>(t.hidden - c < t.colChunk ? t.hidden - c : t.colChunk);
      const uint32_t bytes = n * static_cast<uint32_t>(sizeof(T));
      LocalTensor<T> in = blk.Load(doutGm, token * t.hidden + c, n);
      WidenRow(g, in, n);
      blk.inQue.FreeTensor(in);
      for (uint32_t q = 0; q < k; ++q) {
        const int64_t j = blk.routes.Row(q);
        if (j < 0 || j >= t.numOut) continue;
        LocalTensor<T> o = blk.outQue.template AllocTensor<T>();
        if (blk.routes.HasProbs()) {
          if constexpr (sizeof(T) == sizeof(float)) {  // fp32: scaled straight into the out buffer
            Muls(o.template ReinterpretCast<float>(), g, blk.routes.Prob(q), static_cast<int32_t>(n));
          } else {
            Muls(row, g, blk.routes.Prob(q), static_cast<int32_t>(n));
            NarrowRow(o, row, n);
          }
        } else {
          NarrowRow(o, g, n);
        }
        blk.outQue.EnQue(o);
        o = blk.outQue.template DeQue<T>();
        DataCopyPad(dpermGm[j * t.hidden + c], o, DataCopyExtParams(1, bytes, 0, 0, 0));
        blk.outQue.FreeTensor(o);
        if (!blk.routes.HasProbs()) continue;
        LocalTensor<T> p = blk.Load(permGm, j * t.hidden + c, n);
        Mul(row, AsFloat(row, p, n), g, static_cast<int32_t>(n));
        blk.inQue.FreeTensor(p);
        ReduceSum(sum, row, red, static_cast<int32_t>(n));
        SyncPipes<HardEvent::V_S>();
        dp.SetValue(q, dp.GetValue(q) + sum.GetValue(0));
      }
    }
    if (t.hasProbs) {
      SyncPipes<HardEvent::S_V>();
      LocalTensor<P> o = dprobOut.Get<P>();
      NarrowRow(o, dp, k);
      SyncPipes<HardEvent::V_MTE3>();
      DataCopyPad(dprobGm[token * k], o, DataCopyExtParams(1, k * static_cast<uint32_t>(sizeof(P)), 0, 0, 0));
      SyncPipes<HardEvent::MTE3_V>();  // the next token's dprobs reuse the buffer
    }
  }
}

// One entry per (tokens, probs) dtype pair (MOE_TOKEN_UNPERMUTE_DTYPES, tiling/moe_routing_tiling_data.h).
#define MOE_TOKEN_UNPERMUTE_ENTRY(SUFFIX, T, P, TORCH_T, TORCH_P, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(MOE_TOKEN_UNPERMUTE_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                          \
    MoeRoutingTilingData t;                                                                  \
    CopyTiling(&t, tiling);                                                                  \
    Unpermute<T, P>(permuted, sortedIndices, probs, out, t);                                 \
  }
#define MOE_TOKEN_UNPERMUTE_GRAD_ENTRY(SUFFIX, T, P, TORCH_T, TORCH_P, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(MOE_TOKEN_UNPERMUTE_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                               \
    MoeRoutingTilingData t;                                                                       \
    CopyTiling(&t, tiling);                                                                       \
    UnpermuteGrad<T, P>(permuted, dout, sortedIndices, probs, dpermuted, dprobs, t);              \
  }
MOE_TOKEN_UNPERMUTE_DTYPES(MOE_TOKEN_UNPERMUTE_ENTRY, moe_token_unpermute)
MOE_TOKEN_UNPERMUTE_GRAD_DTYPES(MOE_TOKEN_UNPERMUTE_GRAD_ENTRY, moe_token_unpermute_grad)
#undef MOE_TOKEN_UNPERMUTE_ENTRY
#undef MOE_TOKEN_UNPERMUTE_GRAD_ENTRY
