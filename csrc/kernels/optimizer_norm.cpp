// foreach_norm's blocks (tiling/optimizer_tiling_data.h): the p-norm's partial of every (block, tensor) piece, each
// in its 32-byte GM slot, in fp32 whatever x's dtype:
//   L1  sum |x|        L2  sum x^2 (the square root is taken once the pieces are combined)        inf  max |x|
// A tile's |x| or x^2 is folded in halves with Add down to one 256-byte repeat, then ReduceSum'd (pairwise, ~log2(n)
// roundings, where ReduceSum's count form alone adds its repeats in order), and added to the piece's running partial.
#include "kernel_operator.h"
#include "foreach_table.h"
#include "kernel_utils.h"
#include "optimizer_buffers.h"
#include "optimizer_tiling_data.h"

using namespace AscendC;

template <typename T>
class KernelForeachNorm {
 public:
  __aicore__ inline KernelForeachNorm() {}

  __aicore__ inline void Init(const ForeachNormTilingData& tiling, GM_ADDR partials, TPipe* pipe) {
    t_ = tiling;
    slots_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials),
                           (t_.tensorCount + t_.blockDim) * kForeachNormSlotFloats);
    const ForeachNormUb ub = ForeachNormBuffers(t_.tileElems, sizeof(T));  // the plan the tiling counted
    pipe->InitBuffer(xIn_, kAdamWBufferNum, ub.x);
    pipe->InitBuffer(slotOut_, 1, 32);
    if constexpr (sizeof(T) != sizeof(float)) pipe->InitBuffer(wide_, ub.state);
    pipe->InitBuffer(work_, ub.state);
    pipe->InitBuffer(partial_, 32);
    pipe->InitBuffer(reduced_, 32);
    pipe->InitBuffer(scratch_, 256);
  }

  // Reduces elements [first, first + count) of tensor x into slot `slot`.
  __aicore__ inline void Piece(GM_ADDR x, int64_t first, int64_t count, int64_t slot) {
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x) + first, count);
    LocalTensor<float> partial = partial_.Get<float>();
    Duplicate(partial, 0.0f, static_cast<int32_t>(kForeachNormSlotFloats));
    for (int64_t done = 0; done < count; done += t_.tileElems) {
      const uint32_t n = static_cast<uint32_t>(count - done < t_.tileElems ? count - done : t_.tileElems);
      LocalTensor<T> in = xIn_.AllocTensor<T>();
      DataCopyPad(in, xGm_[done], DataCopyExtParams(1, n * sizeof(T), 0, 0, 0), DataCopyPadExtParams<T>());
      xIn_.EnQue(in);
      Reduce(n, partial);
    }
    LocalTensor<float> out = slotOut_.AllocTensor<float>();
    PipeBarrier<PIPE_V>();
    Adds(out, partial, 0.0f, static_cast<int32_t>(kForeachNormSlotFloats));  // a vector copy into the out queue
    slotOut_.EnQue(out);
    out = slotOut_.DeQue<float>();
    DataCopyPad(slots_[slot * kForeachNormSlotFloats], out, DataCopyExtParams(1, sizeof(float), 0, 0, 0));
    slotOut_.FreeTensor(out);
  }

 private:
  __aicore__ inline void Reduce(uint32_t count, LocalTensor<float>& partial) {
    const int32_t n = static_cast<int32_t>(count);
    LocalTensor<T> in = xIn_.DeQue<T>();
    LocalTensor<float> work = work_.Get<float>();
    LocalTensor<float> x;
    if constexpr (sizeof(T) == sizeof(float)) {
      x = in;
    } else {
      x = wide_.Get<float>();
      Cast(x, in, RoundMode::CAST_NONE, count);
      PipeBarrier<PIPE_V>();
    }
    if (t_.kind == FOREACH_NORM_L2) Mul(work, x, x, n);
    else Abs(work, x, n);
    PipeBarrier<PIPE_V>();
    xIn_.FreeTensor(in);
    LocalTensor<float> reduced = reduced_.Get<float>();
    LocalTensor<float> scratch = scratch_.Get<float>();
    if (t_.kind == FOREACH_NORM_INF) {
      ReduceMax(reduced, work, scratch, n);
      PipeBarrier<PIPE_V>();
      Max(partial, partial, reduced, 1);
    } else {
      uint32_t m = count;
      while (m > 64) {  // halves folded onto halves: split points at multiples of 64 keep operands 32-byte aligned
        const uint32_t half = ((m + 1) / 2 + 63) / 64 * 64;
        Add(work, work, work[half], static_cast<int32_t>(m - half));
        PipeBarrier<PIPE_V>();
        m = half;
      }
      ReduceSum(reduced, work, scratch, static_cast<int32_t>(m));
      PipeBarrier<PIPE_V>();
      Add(partial, partial, reduced, 1);
    }
    PipeBarrier<PIPE_V>();
  }

  ForeachNormTilingData t_;
  TQue<TPosition::VECIN, kAdamWBufferNum> xIn_;
  TQue<TPosition::VECOUT, 1> slotOut_;
  TBuf<TPosition::VECCALC> wide_, work_, partial_, reduced_, scratch_;
  GlobalTensor<T> xGm_;
  GlobalTensor<float> slots_;
};

// The block's pieces: tensor k's part of the block's run goes to slot GetBlockIdx() + k. `Tensor(k)` gives tensor
// k's address and element count (the direct entry: its table; the op package: CANN's list).
template <typename T, typename Tensors>
__aicore__ inline void RunForeachNormPieces(const ForeachNormTilingData& t, GM_ADDR partials, Tensors& tensors) {
  const int64_t block = GetBlockIdx();
  const int64_t begin = block * t.blockElems;
  const int64_t end = begin + t.blockElems < t.totalElems ? begin + t.blockElems : t.totalElems;
  if (begin >= end) return;
  TPipe pipe;
  KernelForeachNorm<T> op;
  op.Init(t, partials, &pipe);
  ForEachPiece(tensors, t.tensorCount, begin, end,
               [&](int64_t k, int64_t first, int64_t count) { op.Piece(tensors.Addr(k), first, count, block + k); });
}

template <typename T>
__aicore__ inline void RunForeachNorm(GM_ADDR table, GM_ADDR partials, GM_ADDR tiling) {
  ForeachNormTilingData t;
  CopyTiling(&t, tiling);
  ForeachTable tensors;
  tensors.Init(table, t.tensorCount, t.totalElems, 0);
  RunForeachNormPieces<T>(t, partials, tensors);
}

#define FOREACH_NORM_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(FOREACH_NORM_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                   \
    RunForeachNorm<T>(table, partials, tiling);                                       \
  }
FOREACH_NORM_DTYPES(FOREACH_NORM_ENTRY, foreach_norm)
#undef FOREACH_NORM_ENTRY
