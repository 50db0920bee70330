// foreach_clip_by_total_norm (tiling/optimizer_tiling_data.h): gradient clipping's second launch. Every block reads
// the per-tensor norms (foreach_norm's outputs) from GM and forms, on the scalar unit in fp32,
//   total = sum n (p 1),  sqrt(sum n^2) (p 2),  max n (inf);   coef = min(1, max_norm / (total + 1e-6))
// (torch.nn.utils.clip_grad_norm_'s coefficient; a NaN total gives a NaN coefficient, as torch's clamp does), then
// scales its run of x in place: x = x * coef, 16-bit x widened to fp32 and rounded once. No host reads the norm in
// between. A coefficient of 1 leaves x as it is (x * 1 is x): no pass. Block 0 writes the total in x's dtype.
#include "kernel_operator.h"
#include "foreach_table.h"
#include "kernel_utils.h"
#include "optimizer_buffers.h"
#include "optimizer_tiling_data.h"

using namespace AscendC;

// An integer of T's width: the norms are copied as bits, so their slots can be zero-padded by DataCopyPad.
template <int Bytes>
struct ClipBits;
template <>
struct ClipBits<2> {
  using type = int16_t;
};
template <>
struct ClipBits<4> {
  using type = int32_t;
};

template <typename T>
class KernelForeachClip {
 public:
  __aicore__ inline KernelForeachClip() {}

  __aicore__ inline void Init(const ForeachClipTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    const ForeachClipUb ub = ForeachClipBuffers(t_.tileElems, sizeof(T));  // the plan the tiling counted
    pipe->InitBuffer(xIn_, kAdamWBufferNum, ub.x);
    pipe->InitBuffer(xOut_, kAdamWBufferNum, ub.x);
    if constexpr (sizeof(T) != sizeof(float)) pipe->InitBuffer(wide_, ub.state);
    pipe->InitBuffer(normsIn_, 1, kForeachClipNormChunk * 32);
    pipe->InitBuffer(normsWide_, kForeachClipNormChunk * 16 * sizeof(float));
    pipe->InitBuffer(total_, 32);
    pipe->InitBuffer(totalOut_, 1, 32);
  }

  // The total of the norms (Tensors::Norm(k): norm k's address), and the coefficient that clips to max_norm.
  template <typename Tensors>
  __aicore__ inline float Coefficient(Tensors& tensors, float& total) {
    using Bits = typename ClipBits<sizeof(T)>::type;
    constexpr uint32_t slot = 32 / sizeof(T);
    float acc = 0.0f;
    for (int64_t first = 0; first < t_.normCount; first += kForeachClipNormChunk) {
      const int64_t left = t_.normCount - first;
      const uint32_t n = static_cast<uint32_t>(left < kForeachClipNormChunk ? left : kForeachClipNormChunk);
      LocalTensor<Bits> in = normsIn_.AllocTensor<Bits>();
      for (uint32_t k = 0; k < n; ++k) {  // one element per 32-byte slot, the rest of the slot zeros
        GlobalTensor<Bits> norm;
        norm.SetGlobalBuffer(reinterpret_cast<__gm__ Bits*>(tensors.Norm(first + k)), 1);
        DataCopyPad(in[k * slot], norm, DataCopyExtParams(1, sizeof(Bits), 0, 0, 0),
                    DataCopyPadExtParams<Bits>(true, 0, static_cast<uint8_t>(slot - 1), 0));
      }
      normsIn_.EnQue(in);
      in = normsIn_.DeQue<Bits>();
      LocalTensor<T> values = in.template ReinterpretCast<T>();
      LocalTensor<float> wide = normsWide_.Get<float>();
      if constexpr (sizeof(T) == sizeof(float)) {
        Adds(wide, values, 0.0f, static_cast<int32_t>(n * slot));  // into the buffer the scalar unit reads
      } else {
        Cast(wide, values, RoundMode::CAST_NONE, n * slot);
      }
      SyncPipes<HardEvent::V_S>();
      for (uint32_t k = 0; k < n; ++k) {
        const float v = wide.GetValue(k * slot);
        if (t_.kind == FOREACH_NORM_L2) acc += v * v;
        else if (t_.kind == FOREACH_NORM_L1) acc += v;
        else if (acc == acc && !(v <= acc)) acc = v;  // max, a NaN kept once met
      }
      SyncPipes<HardEvent::S_V>();  // the next chunk's values are written after these reads
      normsIn_.FreeTensor(in);
    }
    total = acc;
    if (t_.kind == FOREACH_NORM_L2) {  // the square root on the vector unit, once
      LocalTensor<float> root = total_.Get<float>();
      Duplicate(root, acc, static_cast<int32_t>(kForeachNormSlotFloats));
      PipeBarrier<PIPE_V>();
      Sqrt(root, root, static_cast<int32_t>(kForeachNormSlotFloats));
      SyncPipes<HardEvent::V_S>();
      total = root.GetValue(0);
      SyncPipes<HardEvent::S_V>();
    }
    const float coef = t_.maxNorm / (total + 1e-6f);
    return coef > 1.0f ? 1.0f : coef;  // NaN stays NaN
  }

  // Block 0: the total, rounded once to x's dtype, into total_norm.
  __aicore__ inline void WriteTotal(GM_ADDR totalNorm, float total) {
    LocalTensor<float> f = total_.Get<float>();
    Duplicate(f, total, static_cast<int32_t>(kForeachNormSlotFloats));
    PipeBarrier<PIPE_V>();
    LocalTensor<T> out = totalOut_.AllocTensor<T>();
    if constexpr (sizeof(T) == sizeof(float)) {
      Adds(out, f, 0.0f, static_cast<int32_t>(kForeachNormSlotFloats));
    } else {
      Cast(out, f, RoundMode::CAST_RINT, kForeachNormSlotFloats);
    }
    totalOut_.EnQue(out);
    out = totalOut_.DeQue<T>();
    GlobalTensor<T> gm;
    gm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(totalNorm), 1);
    DataCopyPad(gm, out, DataCopyExtParams(1, sizeof(T), 0, 0, 0));
    totalOut_.FreeTensor(out);
  }

  // x[first, first + count) of one tensor times coef, a tile at a time.
  __aicore__ inline void Scale(GM_ADDR x, int64_t first, int64_t count, float coef) {
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x) + first, count);
    for (int64_t done = 0; done < count; done += t_.tileElems) {
      const uint32_t n = static_cast<uint32_t>(count - done < t_.tileElems ? count - done : t_.tileElems);
      LocalTensor<T> in = xIn_.AllocTensor<T>();
      DataCopyPad(in, xGm_[done], DataCopyExtParams(1, n * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>());
      xIn_.EnQue(in);
      in = xIn_.DeQue<T>();
      LocalTensor<T> out = xOut_.AllocTensor<T>();
      if constexpr (sizeof(T) == sizeof(float)) {
        Muls(out, in, coef, static_cast<int32_t>(n));
      } else {
        LocalTensor<float> w = wide_.Get<float>();
        Cast(w, in, RoundMode::CAST_NONE, n);
        PipeBarrier<PIPE_V>();
        Muls(w, w, coef, static_cast<int32_t>(n));
        PipeBarrier<PIPE_V>();
        Cast(out, w, RoundMode::CAST_RINT, n);
      }
      xIn_.FreeTensor(in);
      xOut_.EnQue(out);
      out = xOut_.DeQue<T>();
      DataCopyPad(xGm_[done], out, DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
      xOut_.FreeTensor(out);
    }
  }

 private:
  ForeachClipTilingData t_;
  TQue<TPosition::VECIN, kAdamWBufferNum> xIn_;
  TQue<TPosition::VECOUT, kAdamWBufferNum> xOut_;
  TQue<TPosition::VECIN, 1> normsIn_;
  TQue<TPosition::VECOUT, 1> totalOut_;
  TBuf<TPosition::VECCALC> wide_, normsWide_, total_;
  GlobalTensor<T> xGm_;
};

// The block's work: the coefficient, the total (block 0), then the pieces of x in its run. `Tensors` gives x's
// tensor k (Addr, Elems) and norm k (Norm): the direct entry's table or, in the op package, CANN's lists.
template <typename T, typename Tensors>
__aicore__ inline void RunForeachClipBlocks(const ForeachClipTilingData& t, GM_ADDR totalNorm, Tensors& tensors) {
  TPipe pipe;
  KernelForeachClip<T> op;
  op.Init(t, &pipe);
  float total = 0.0f;
  const float coef = op.Coefficient(tensors, total);
  if (GetBlockIdx() == 0) op.WriteTotal(totalNorm, total);
  if (t.errorIfNonfinite != 0 && !(total - total == 0.0f)) return;  // inf or NaN: x left for the caller's error
  if (coef == 1.0f) return;
  const int64_t begin = GetBlockIdx() * t.blockElems;
  const int64_t end = begin + t.blockElems < t.totalElems ? begin + t.blockElems : t.totalElems;
  ForEachPiece(tensors, t.tensorCount, begin, end,
               [&](int64_t k, int64_t first, int64_t count) { op.Scale(tensors.Addr(k), first, count, coef); });
}

template <typename T>
__aicore__ inline void RunForeachClip(GM_ADDR table, GM_ADDR totalNorm, GM_ADDR tiling) {
  ForeachClipTilingData t;
  CopyTiling(&t, tiling);
  ForeachTable tensors;
  tensors.Init(table, t.tensorCount, t.totalElems, t.normCount);
  RunForeachClipBlocks<T>(t, totalNorm, tensors);
}

#define FOREACH_CLIP_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(FOREACH_CLIP_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                   \
    RunForeachClip<T>(table, total_norm, tiling);                                     \
  }
FOREACH_CLIP_DTYPES(FOREACH_CLIP_ENTRY, foreach_clip_by_total_norm)
#undef FOREACH_CLIP_ENTRY
