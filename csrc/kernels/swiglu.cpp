// SwiGLU, forward and backward, on x viewed as [outer, 2, inner] (any split dim; see swiglu_tiling_data.h):
//   forward   y  = silu(A) * B,                  silu(a) = a * sigmoid(a) = a / (1 + exp(-a))
//   backward  dA = dy * B * silu'(A),           silu'(a) = s * (1 + a * (1 - s)),  s = sigmoid(a)
//             dB = dy * silu(A)                 (fp32: silu' evaluated as s * (s + (1 + a) * (1 - s)))
// A and B of a row are `inner` contiguous elements each, `inner` apart; a tile is up to tileRows rows
// by tileCols columns of them, landed row by row with DataCopyPad (any inner: 1, 769, 11008, ...).
// Padding columns in UB are computed on like the rest and never copied out.
// fp16 / bf16 are widened to fp32 (CAST_NONE), computed in fp32 and rounded once (CAST_RINT).
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "swiglu_buffers.h"
#include "swiglu_tiling_data.h"

using namespace AscendC;

constexpr int32_t SWIGLU_BUFFER_NUM = kSwigluBufferNum;  // double buffering: load tile i+1 while computing tile i

// Where task `task` sits in the [outer, inner] problem; pitch is its UB row length (cols padded to 32 bytes).
struct SwigluTile {
  int64_t row;
  int64_t col;
  uint32_t rows;
  uint32_t cols;
  uint32_t pitch;
};

template <typename T>
__aicore__ inline SwigluTile SwigluTaskTile(const SwigluTilingData& t, int64_t task) {
  SwigluTile tile;
  tile.row = (task / t.colTiles) * t.tileRows;
  tile.col = (task % t.colTiles) * t.tileCols;
  const int64_t rowsLeft = t.outer - tile.row, colsLeft = t.inner - tile.col;
  tile.rows = static_cast<uint32_t>(rowsLeft < t.tileRows ? rowsLeft : t.tileRows);
  tile.cols = static_cast<uint32_t>(colsLeft < t.tileCols ? colsLeft : t.tileCols);
  tile.pitch = PaddedLen<T>(tile.cols);
  return tile;
}

// Loads `rows` runs of `cols` elements starting at gm[first], one every `stride` elements, into UB rows.
template <typename T>
__aicore__ inline void SwigluLoad(LocalTensor<T>& dst, GlobalTensor<T>& gm, int64_t first, const SwigluTile& tile,
                                  int64_t stride) {
  const uint32_t runBytes = tile.cols * sizeof(T);
  const uint32_t gap = static_cast<uint32_t>((stride - tile.cols) * sizeof(T));
  DataCopyPad(dst, gm[first], DataCopyExtParams(static_cast<uint16_t>(tile.rows), runBytes, gap, 0, 0),
              DataCopyPadExtParams<T>());
}

// Stores the UB rows of a tile to gm[first], one run of `cols` elements every `stride` elements.
template <typename T>
__aicore__ inline void SwigluStore(GlobalTensor<T>& gm, int64_t first, LocalTensor<T>& src, const SwigluTile& tile,
                                   int64_t stride) {
  const uint32_t runBytes = tile.cols * sizeof(T);
  const uint32_t gap = static_cast<uint32_t>((stride - tile.cols) * sizeof(T));
  DataCopyPad(gm[first], src, DataCopyExtParams(static_cast<uint16_t>(tile.rows), runBytes, 0, gap, 0));
}

// fp32 view of a tile: the tile itself for float, a widened copy otherwise.
template <typename T>
__aicore__ inline LocalTensor<float> SwigluWiden(LocalTensor<T>& src, TBuf<TPosition::VECCALC>& buf, int32_t n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return src.template ReinterpretCast<float>();
  } else {
    LocalTensor<float> wide = buf.Get<float>();
    Cast(wide, src, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
    return wide;
  }
}

// fp32 result buffer of an output tile: the tile itself for float, a work buffer otherwise.
template <typename T>
__aicore__ inline LocalTensor<float> SwigluResult(LocalTensor<T>& out, TBuf<TPosition::VECCALC>& buf) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return out.template ReinterpretCast<float>();
  } else {
    return buf.Get<float>();
  }
}

// Rounds an fp32 result into its output tile once (nothing to do for float).
template <typename T>
__aicore__ inline void SwigluNarrow(LocalTensor<T>& out, LocalTensor<float>& result, int32_t n) {
  if constexpr (sizeof(T) != sizeof(float)) {
    PipeBarrier<PIPE_V>();
    Cast(out, result, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
  }
}

#include "swiglu_packed.h"  // uses the helpers above

// The block loop of both SwiGLU kernels: the block's tasks' tiles in order, each through the kernel's CopyIn,
// Compute and CopyOut.
template <typename T, typename Kernel>
__aicore__ inline void SwigluBlock(Kernel& op, const SwigluTilingData& t) {
  int64_t begin = 0, count = 0;
  BlockTaskRange(t.tasksPerBlock, t.tasksRemainder, begin, count);
  for (int64_t task = begin; task < begin + count; ++task) {
    const SwigluTile tile = SwigluTaskTile<T>(t, task);
    op.CopyIn(tile);
    op.Compute(tile);
    op.CopyOut(tile);
  }
}

template <typename T>
class KernelSwiglu {
 public:
  __aicore__ inline KernelSwiglu() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SwigluTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    const uint32_t tileElems = t_.tileRows * t_.tilePitch;
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), t_.outer * 2 * t_.inner);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y), t_.outer * t_.inner);
    const SwigluUb ub = SwigluBuffers(tileElems, sizeof(T), false);  // the plan the tiling counted
    pipe->InitBuffer(inA_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(inB_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(outY_, SWIGLU_BUFFER_NUM, ub.tile);
    if constexpr (sizeof(T) != sizeof(float)) {
      pipe->InitBuffer(aFloatBuf_, ub.widened);
      pipe->InitBuffer(bFloatBuf_, ub.widened);
      pipe->InitBuffer(yFloatBuf_, ub.widened);
    }
  }

  __aicore__ inline void Process() { SwigluBlock<T>(*this, t_); }

  // one tile's steps, in SwigluBlock's order
  __aicore__ inline void CopyIn(const SwigluTile& tile) {
    const int64_t first = tile.row * 2 * t_.inner + tile.col;
    LocalTensor<T> a = inA_.AllocTensor<T>();
    LocalTensor<T> b = inB_.AllocTensor<T>();
    SwigluLoad(a, xGm_, first, tile, 2 * t_.inner);
    SwigluLoad(b, xGm_, first + t_.inner, tile, 2 * t_.inner);
    inA_.EnQue(a);
    inB_.EnQue(b);
  }

  __aicore__ inline void Compute(const SwigluTile& tile) {
    const int32_t n = static_cast<int32_t>(tile.rows * tile.pitch);
    LocalTensor<T> a = inA_.DeQue<T>();
    LocalTensor<T> b = inB_.DeQue<T>();
    LocalTensor<T> y = outY_.AllocTensor<T>();
    LocalTensor<float> af = SwigluWiden(a, aFloatBuf_, n);
    LocalTensor<float> bf = SwigluWiden(b, bFloatBuf_, n);
    LocalTensor<float> w = SwigluResult(y, yFloatBuf_);
    PipeBarrier<PIPE_V>();
    // 1. w = b * swish(a, 1) = silu(a) * b  (the SwiGLU activation API: Muls/Exp/Adds/Div/Mul on the device)
    SwiGLU<float, false>(w, bf, af, 1.0f, static_cast<uint32_t>(n));
    PipeBarrier<PIPE_V>();
    // 2. y = w rounded once to T
    SwigluNarrow(y, w, n);
    outY_.EnQue(y);
    inA_.FreeTensor(a);
    inB_.FreeTensor(b);
  }

  __aicore__ inline void CopyOut(const SwigluTile& tile) {
    LocalTensor<T> y = outY_.DeQue<T>();
    SwigluStore(yGm_, tile.row * t_.inner + tile.col, y, tile, t_.inner);
    outY_.FreeTensor(y);
  }

 private:
  SwigluTilingData t_;
  GlobalTensor<T> xGm_, yGm_;
  TQue<QuePosition::VECIN, SWIGLU_BUFFER_NUM> inA_, inB_;
  TQue<QuePosition::VECOUT, SWIGLU_BUFFER_NUM> outY_;
  TBuf<TPosition::VECCALC> aFloatBuf_, bFloatBuf_, yFloatBuf_;
};

template <typename T>
class KernelSwigluGrad {
 public:
  __aicore__ inline KernelSwigluGrad() {}

  __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, const SwigluTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    const uint32_t tileElems = t_.tileRows * t_.tilePitch;
    dyGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy), t_.outer * t_.inner);
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), t_.outer * 2 * t_.inner);
    dxGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dx), t_.outer * 2 * t_.inner);
    const SwigluUb ub = SwigluBuffers(tileElems, sizeof(T), true);  // the plan the tiling counted
    pipe->InitBuffer(inDy_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(inA_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(inB_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(outDa_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(outDb_, SWIGLU_BUFFER_NUM, ub.tile);
    pipe->InitBuffer(sigmoidBuf_, ub.sigmoid);
    pipe->InitBuffer(onesBuf_, ub.sigmoid);
    if constexpr (sizeof(T) != sizeof(float)) {  // fp32 dA goes into B's widened buffer (Compute)
      pipe->InitBuffer(dyFloatBuf_, ub.widened);
      pipe->InitBuffer(aFloatBuf_, ub.widened);
      pipe->InitBuffer(bFloatBuf_, ub.widened);
      pipe->InitBuffer(dbFloatBuf_, ub.widened);
    }
    Duplicate(onesBuf_.Get<float>(), 1.0f, static_cast<int32_t>(tileElems));  // 1 / (1 + e) and 1 - s
    PipeBarrier<PIPE_V>();
  }

  __aicore__ inline void Process() { SwigluBlock<T>(*this, t_); }

  // one tile's steps, in SwigluBlock's order
  __aicore__ inline void CopyIn(const SwigluTile& tile) {
    const int64_t first = tile.row * 2 * t_.inner + tile.col;
    LocalTensor<T> dy = inDy_.AllocTensor<T>();
    LocalTensor<T> a = inA_.AllocTensor<T>();
    LocalTensor<T> b = inB_.AllocTensor<T>();
    SwigluLoad(dy, dyGm_, tile.row * t_.inner + tile.col, tile, t_.inner);
    SwigluLoad(a, xGm_, first, tile, 2 * t_.inner);
    SwigluLoad(b, xGm_, first + t_.inner, tile, 2 * t_.inner);
    inDy_.EnQue(dy);
    inA_.EnQue(a);
    inB_.EnQue(b);
  }

  __aicore__ inline void Compute(const SwigluTile& tile) {
    const int32_t n = static_cast<int32_t>(tile.rows * tile.pitch);
    LocalTensor<T> dy = inDy_.DeQue<T>();
    LocalTensor<T> a = inA_.DeQue<T>();
    LocalTensor<T> b = inB_.DeQue<T>();
    LocalTensor<T> da = outDa_.AllocTensor<T>();
    LocalTensor<T> db = outDb_.AllocTensor<T>();
    LocalTensor<float> dyf = SwigluWiden(dy, dyFloatBuf_, n);
    LocalTensor<float> af = SwigluWiden(a, aFloatBuf_, n);
    LocalTensor<float> bf = SwigluWiden(b, bFloatBuf_, n);
    LocalTensor<float> dbf = SwigluResult(db, dbFloatBuf_);
    // fp32 dA: da's tile; fp16/bf16: B's widened buffer, free once silu'(a) * b is taken (step 4)
    LocalTensor<float> daf = sizeof(T) == sizeof(float) ? da.template ReinterpretCast<float>() : bf;
    LocalTensor<float> e = sizeof(T) == sizeof(float) ? daf : dbf;  // 1 + exp(-a): dbf is free until step 3
    LocalTensor<float> s = sigmoidBuf_.Get<float>();
    LocalTensor<float> ones = onesBuf_.Get<float>();
    PipeBarrier<PIPE_V>();
    // 1. e = 1 + exp(-a)
    Muls(e, af, -1.0f, n);
    PipeBarrier<PIPE_V>();
    Exp(e, e, n);
    PipeBarrier<PIPE_V>();
    Adds(e, e, 1.0f, n);
    PipeBarrier<PIPE_V>();
    // 2. s = sigmoid(a) = 1 / (1 + exp(-a))
    Div(s, ones, e, n);
    PipeBarrier<PIPE_V>();
    // 3. dbf = t = 1 + a * (1 - s), so that silu'(a) = s * t
    Sub(dbf, ones, s, n);
    if constexpr (sizeof(T) == sizeof(float)) {
      // fp32: t as s + (1 + a) * (1 - s). Near the zero of silu' (a = -1.278) 1 + a is exact, the terms that
      // cancel are ~s (0.22) in size, not 1, and the rounding of 1 - s is scaled by 1 + a (0.28), not a (1.28):
      // ~0.55x PyTorch's small-value errors (README, Accuracy), for one more Add
      Adds(daf, af, 1.0f, n);
      PipeBarrier<PIPE_V>();
      Mul(dbf, dbf, daf, n);
      PipeBarrier<PIPE_V>();
      Add(dbf, dbf, s, n);
    } else {
      // fp16 / bf16: that fp32 cancellation error is far below the output's rounding
      PipeBarrier<PIPE_V>();
      Mul(dbf, dbf, af, n);
      PipeBarrier<PIPE_V>();
      Adds(dbf, dbf, 1.0f, n);
    }
    PipeBarrier<PIPE_V>();
    Mul(dbf, dbf, s, n);
    PipeBarrier<PIPE_V>();
    // 4. dA = (silu'(a) * b) * dy
    Mul(dbf, dbf, bf, n);
    PipeBarrier<PIPE_V>();
    Mul(daf, dbf, dyf, n);
    PipeBarrier<PIPE_V>();
    // 5. dB = dy * silu(a) = (a * s) * dy
    Mul(dbf, af, s, n);
    PipeBarrier<PIPE_V>();
    Mul(dbf, dbf, dyf, n);
    // 6. round dA and dB once to T
    SwigluNarrow(da, daf, n);
    SwigluNarrow(db, dbf, n);
    outDa_.EnQue(da);
    outDb_.EnQue(db);
    inDy_.FreeTensor(dy);
    inA_.FreeTensor(a);
    inB_.FreeTensor(b);
  }

  __aicore__ inline void CopyOut(const SwigluTile& tile) {
    const int64_t first = tile.row * 2 * t_.inner + tile.col;
    LocalTensor<T> da = outDa_.DeQue<T>();
    LocalTensor<T> db = outDb_.DeQue<T>();
    SwigluStore(dxGm_, first, da, tile, 2 * t_.inner);
    SwigluStore(dxGm_, first + t_.inner, db, tile, 2 * t_.inner);
    outDa_.FreeTensor(da);
    outDb_.FreeTensor(db);
  }

 private:
  SwigluTilingData t_;
  GlobalTensor<T> dyGm_, xGm_, dxGm_;
  TQue<QuePosition::VECIN, SWIGLU_BUFFER_NUM> inDy_, inA_, inB_;
  TQue<QuePosition::VECOUT, SWIGLU_BUFFER_NUM> outDa_, outDb_;
  TBuf<TPosition::VECCALC> sigmoidBuf_, onesBuf_, dyFloatBuf_, aFloatBuf_, bFloatBuf_, dbFloatBuf_;
};

// The forward kernel the tiling chose (also the op package's entry, csrc/kernels/op_package/swiglu/swiglu.cpp).
template <typename T>
__aicore__ inline void ProcessSwiglu(GM_ADDR x, GM_ADDR y, const SwigluTilingData& tilingData, TPipe* pipe) {
  if (tilingData.packed) {  // inner 1: (a, b) pairs (swiglu_packed.h)
    KernelSwigluPacked<T> packed;
    packed.Init(x, y, tilingData, pipe);
    packed.Process();
    return;
  }
  KernelSwiglu<T> op;
  op.Init(x, y, tilingData, pipe);
  op.Process();
}

template <typename T>
__aicore__ inline void RunSwiglu(GM_ADDR x, GM_ADDR y, GM_ADDR tiling) {
  SwigluTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  TPipe pipe;
  ProcessSwiglu<T>(x, y, tilingData, &pipe);
}

template <typename T>
__aicore__ inline void RunSwigluGrad(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR tiling) {
  SwigluTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  TPipe pipe;
  KernelSwigluGrad<T> op;
  op.Init(dy, x, dx, tilingData, &pipe);
  op.Process();
}

// One entry per dtype and direction (SWIGLU_DTYPES, tiling/swiglu_tiling_data.h); every tensor of a call shares the
// dtype.
#define SWIGLU_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(SWIGLU_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                             \
    RunSwiglu<T>(x, y, tiling);                                                 \
  }
#define SWIGLU_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(SWIGLU_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                  \
    RunSwigluGrad<T>(dy, x, dx, tiling);                                             \
  }
SWIGLU_DTYPES(SWIGLU_ENTRY, swiglu)
SWIGLU_GRAD_DTYPES(SWIGLU_GRAD_ENTRY, swiglu_grad)
#undef SWIGLU_ENTRY
#undef SWIGLU_GRAD_ENTRY
