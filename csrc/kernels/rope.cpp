// Rotary position embedding, forward and backward, for x rows of any even head_dim D:
//   forward   y  = x * cos + rot(x) * sin
//   backward  dx = dy * cos + rot^T(dy * sin)
// rot is rotate_half ([-x2, x1], HF / npu_rotary_mul 'half') or the pair rotation
// ((-x[2i+1], x[2i]), the tutorial's rope_customer and 'interleave'; rope_customer reads cos/sin
// at the even lane of each pair for both lanes, see SignGathered). Both are a permutation P
// of a row times a sign pattern s, rot(x) = s * P(x), and P is its own inverse and commutes with
// element-wise products, so both directions are one formula,  out = x * cos + P(x) * sinT,  with
// sinT = sin * s forward and sinT = P(sin) * P(s) = P(sin) * -s backward, built once per table load.
// P is two strided UB->UB copies of row halves where half a row of fp32 is whole 32-byte blocks
// (half mode, D % 16 == 0), else one Gather through a precomputed offset table (any D); fp16/bf16 x
// in the pair modes is swapped on its raw bits instead (SwapPairs): 4 vector cycles per 64 elements
// in the 910B model against the fp32 Gather's 12.
// A task loads one cos/sin tile and reuses it for every x line that shares it (e.g. all heads),
// tileLines lines per UB tile with the tables repeated for each, so that a short tile (few rows per
// core) still makes long vector instructions: each one's start and PIPE_V barrier are paid per tile.
// fp16 / bf16 are computed in fp32 and rounded once on the way out (CAST_RINT).
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "rope_buffers.h"
#include "rope_tiling_data.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = kRopeTableBuffers;  // cos/sin double-buffered; x and y take the tiling's xBuffers

template <typename T>
class KernelRope {
 public:
  __aicore__ inline KernelRope() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR cos, GM_ADDR sin, GM_ADDR y, const RopeTilingData& tiling,
                              TPipe* pipe) {
    t_ = tiling;
    const uint32_t tileElems = t_.tileLines * t_.tileRows * t_.rowPitch;
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), t_.xRows * t_.xRowElems);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y), t_.xRows * t_.xRowElems);
    cosGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(cos), t_.rRows * t_.headDim);
    sinGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(sin), t_.rRows * t_.headDim);
    // the plan the tiling counted (tiling/rope_buffers.h), in its order
    const RopeUb ub =
        RopeBuffers(tileElems, sizeof(T), t_.xBuffers, t_.rotateByCopy, t_.rotaryMode == ROPE_MODE_TUTORIAL);
    pipe->InitBuffer(inX_, static_cast<uint8_t>(t_.xBuffers), ub.tile);
    pipe->InitBuffer(inCos_, BUFFER_NUM, ub.tile);
    pipe->InitBuffer(inSin_, BUFFER_NUM, ub.tile);
    pipe->InitBuffer(outY_, static_cast<uint8_t>(t_.xBuffers), ub.tile);
    if constexpr (!IsFloat()) {
      pipe->InitBuffer(accBuf_, ub.widened);
      pipe->InitBuffer(xFloatBuf_, ub.widened);
      pipe->InitBuffer(cosFloatBuf_, ub.widened);
      pipe->InitBuffer(sinFloatBuf_, ub.widened);
    }
    if (!t_.rotateByCopy) {
      pipe->InitBuffer(offsetBuf_, ub.table);
      pipe->InitBuffer(signBuf_, ub.table);
      if (t_.rotaryMode == ROPE_MODE_TUTORIAL) pipe->InitBuffer(laneBuf_, ub.table);
      BuildTables();
    }
  }

  // fromLastBlock: blocks take their tasks in reverse block order (apply_rotary_pos_emb's key part,
  // so the remainders of query and key land on different blocks).
  __aicore__ inline void Process(bool fromLastBlock = false) {
    int64_t begin = 0, count = 0;
    if (fromLastBlock) {
      const int64_t b = static_cast<int64_t>(GetBlockNum()) - 1 - static_cast<int64_t>(GetBlockIdx());
      count = t_.tasksPerBlock + (b < t_.tasksRemainder ? 1 : 0);
      begin = b * t_.tasksPerBlock + (b < t_.tasksRemainder ? b : t_.tasksRemainder);
    } else {
      BlockTaskRange(t_.tasksPerBlock, t_.tasksRemainder, begin, count);
    }
    for (int64_t task = begin; task < begin + count; ++task) {
      const int64_t ownLine = task / t_.tilesPerLine;
      const int64_t first = (task % t_.tilesPerLine) * t_.tileRows;
      const int64_t left = t_.xDims[t_.tileAxis] - first;
      const uint32_t rows = static_cast<uint32_t>(left < t_.tileRows ? left : t_.tileRows);
      LoadTables(ownLine, first, rows);
      for (int64_t shared = 0; shared < t_.sharedLines; shared += t_.tileLines) {
        const int64_t left = t_.sharedLines - shared;
        const uint32_t lines = static_cast<uint32_t>(left < t_.tileLines ? left : t_.tileLines);
        CopyIn(ownLine, shared, first, rows, lines);
        Compute(lines * rows);  // the lines' rows lie back to back: one tile of lines x rows rows
        CopyOut(ownLine, shared, first, rows, lines);
      }
      inCos_.FreeTensor(cos_);
      inSin_.FreeTensor(sin_);
    }
  }

 private:
  static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

  // Gather path, element g of a tile: offsets = byte offset of P(g), signs = s (-s backward),
  // lanes (tutorial) = byte offset of g's even lane. The pair modes' tables are periodic in g
  // (pitch is even; padding pairs swap among themselves), so one 32-byte block is seeded by the
  // scalar unit; half mode seeds row 0 (padding maps to itself). Then doubled by the vector unit.
  __aicore__ inline void BuildTables() {
    LocalTensor<int32_t> offsets = offsetBuf_.Get<int32_t>();
    LocalTensor<float> signs = signBuf_.Get<float>();
    const bool tutorial = t_.rotaryMode == ROPE_MODE_TUTORIAL, halves = t_.rotaryMode == ROPE_MODE_HALF;
    LocalTensor<int32_t> lanes;
    if (tutorial) lanes = laneBuf_.Get<int32_t>();
    const uint32_t d = t_.headDim, half = d / 2, total = t_.tileLines * t_.tileRows * t_.rowPitch;
    const uint32_t seed = halves ? t_.rowPitch : 32 / sizeof(float);
    const float flip = t_.backward ? -1.0f : 1.0f;
    for (uint32_t j = 0; j < seed; ++j) {
      uint32_t partner = j ^ 1u;
      float sign = (j % 2 == 0) ? -1.0f : 1.0f;
      if (halves) {
        partner = j >= d ? j : (j < half ? j + half : j - half);
        sign = j >= d ? 0.0f : (j < half ? -1.0f : 1.0f);
      }
      offsets.SetValue(j, static_cast<int32_t>(partner * sizeof(float)));
      signs.SetValue(j, sign * flip);
      if (tutorial) lanes.SetValue(j, static_cast<int32_t>((j & ~1u) * sizeof(float)));
    }
    SyncPipes<HardEvent::S_V>();
    for (uint32_t done = seed; done < total; done *= 2) {  // [done, done + k) from [0, k)
      const uint32_t k = total - done < done ? total - done : done;
      const int32_t shift = static_cast<int32_t>(done * sizeof(float));
      Adds(offsets[done], offsets, shift, static_cast<int32_t>(k));
      DataCopy(signs[done], signs, k);
      if (tutorial) Adds(lanes[done], lanes, shift, static_cast<int32_t>(k));
      PipeBarrier<PIPE_V>();
    }
  }

  // First x row of line (ownLine, shared): ownLine indexes the line dims along which cos/sin
  // vary, shared the ones along which they broadcast; both in (outer, inner) order.
  __aicore__ inline int64_t LineRow(int64_t ownLine, int64_t shared) const {
    int64_t row = 0;
    for (int32_t k = 1; k >= 0; --k) {
      const int64_t dim = t_.xDims[t_.lineAxes[k]];
      int64_t& rest = t_.lineVaries[k] ? ownLine : shared;
      row += (rest % dim) * t_.xStrides[t_.lineAxes[k]];
      rest /= dim;
    }
    return row;
  }

  __aicore__ inline int64_t TableRow(int64_t ownLine, int64_t first) const {
    int64_t row = first * t_.rStrides[t_.tileAxis];
    for (int32_t k = 1; k >= 0; --k) {
      if (!t_.lineVaries[k]) continue;
      const int64_t dim = t_.xDims[t_.lineAxes[k]];
      row += (ownLine % dim) * t_.rStrides[t_.lineAxes[k]];
      ownLine /= dim;
    }
    return row;
  }

  // 1. cos and sinT for the task's rows, in fp32, kept for all its lines. The work tile: the
  // fp32 accumulator for fp16/bf16, a borrowed output buffer for fp32 (both free between Computes).
  __aicore__ inline void LoadTables(int64_t ownLine, int64_t first, uint32_t rows) {
    const int64_t rRow = TableRow(ownLine, first);
    LoadTable(inCos_, cosGm_, rRow, rows);
    LoadTable(inSin_, sinGm_, rRow, rows);
    cos_ = inCos_.DeQue<T>();
    sin_ = inSin_.DeQue<T>();
    const int32_t n = static_cast<int32_t>(rows * t_.rowPitch);
    cosf_ = Widen(cos_, cosFloatBuf_, n);
    sinT_ = Widen(sin_, sinFloatBuf_, n);
    // only interleave's forward needs no work tile; borrowing a y buffer waits for its last store
    const bool borrow = IsFloat() && (t_.rotateByCopy || t_.backward || t_.rotaryMode == ROPE_MODE_TUTORIAL);
    LocalTensor<T> borrowed;
    LocalTensor<float> work;
    if constexpr (IsFloat()) {
      if (borrow) borrowed = outY_.AllocTensor<T>();
      work = borrowed.template ReinterpretCast<float>();
    } else {
      work = accBuf_.Get<float>();
    }
    PipeBarrier<PIPE_V>();
    if (t_.rotateByCopy) {
      SignHalves(work, rows, n);
    } else {
      SignGathered(work, n);
    }
    if (borrow) outY_.FreeTensor(borrowed);
    RepeatTables(n);
  }

  // cos and sinT once per line of a tile (the tile's lines are back to back, n elements each).
  __aicore__ inline void RepeatTables(int32_t n) {
    if (t_.tileLines < 2) return;
    PipeBarrier<PIPE_V>();
    for (uint32_t line = 1; line < t_.tileLines; ++line) {
      DataCopy(cosf_[line * n], cosf_, static_cast<uint32_t>(n));
      DataCopy(sinT_[line * n], sinT_, static_cast<uint32_t>(n));
    }
    PipeBarrier<PIPE_V>();
  }

  // Copy path: forward sinT = [-sin1, sin2], backward P(sin) * -s = [sin2, -sin1].
  __aicore__ inline void SignHalves(LocalTensor<float>& work, uint32_t rows, int32_t n) {
    const uint32_t half = t_.headDim / 2;
    Muls(work, sinT_, -1.0f, n);
    PipeBarrier<PIPE_V>();
    if (t_.backward) {
      DataCopy(sinT_, sinT_[half], HalfRows(rows));
      PipeBarrier<PIPE_V>();
      DataCopy(sinT_[half], work, HalfRows(rows));
    } else {
      DataCopy(sinT_, work, HalfRows(rows));
    }
    PipeBarrier<PIPE_V>();
  }

  // Gather path: sinT = sin * signs forward, P(sin) * signs backward (signs already -s there).
  // rope_customer first reads both lanes of a pair from its even lane (the tutorial ignores the odd
  // lanes of its tables); P of such a table is the table itself, so backward needs no P.
  __aicore__ inline void SignGathered(LocalTensor<float>& work, int32_t n) {
    LocalTensor<float> signs = signBuf_.Get<float>();
    if (t_.rotaryMode == ROPE_MODE_TUTORIAL) {
      LocalTensor<uint32_t> lanes = laneBuf_.Get<uint32_t>();
      Gather(work, cosf_, lanes, 0, static_cast<uint32_t>(n));
      PipeBarrier<PIPE_V>();
      DataCopy(cosf_, work, n);
      PipeBarrier<PIPE_V>();
      Gather(work, sinT_, lanes, 0, static_cast<uint32_t>(n));
    } else if (t_.backward) {
      Gather(work, sinT_, offsetBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(n));
    } else {
      Mul(sinT_, sinT_, signs, n);
      return;
    }
    PipeBarrier<PIPE_V>();
    Mul(sinT_, work, signs, n);
  }

  // Every row's half, in 32-byte blocks: rows x (D/2) fp32, a row pitch apart (copy path only).
  __aicore__ inline DataCopyParams HalfRows(uint32_t rows) const {
    const uint16_t halfBlocks = static_cast<uint16_t>(t_.headDim / 2 * sizeof(float) / 32);
    const uint16_t gap = static_cast<uint16_t>(t_.rowPitch * sizeof(float) / 32 - halfBlocks);
    return DataCopyParams(static_cast<uint16_t>(rows), halfBlocks, gap, gap);
  }

  // dst = P(src) over the tile's rows: the two halves swapped by copies, or one Gather.
  __aicore__ inline void Rotate(const LocalTensor<float>& dst, const LocalTensor<float>& src, uint32_t rows) {
    if (t_.rotateByCopy) {
      const uint32_t half = t_.headDim / 2;
      DataCopy(dst, src[half], HalfRows(rows));
      DataCopy(dst[half], src, HalfRows(rows));
    } else {
      Gather(dst, src, offsetBuf_.Get<uint32_t>(), 0, rows * t_.rowPitch);
    }
  }

  // The pair modes' P on a 16-bit tile is exact on the raw bits, and cheaper than an fp32 Gather.
  __aicore__ inline bool SwapsByShift() const { return !IsFloat() && t_.rotaryMode != ROPE_MODE_HALF; }

  // acc = widen(P(x)) for 16-bit x: seen as uint32 words (the row pitch is even, so no pair straddles
  // two), (w << 16) | (w >> 16) swaps each word's two lanes; Or is 16-bit only on A2, so it runs on the
  // halves' uint16 view. The shifted words borrow the front of acc and the (not yet written) output tile.
  __aicore__ inline void SwapPairs(const LocalTensor<float>& acc, LocalTensor<T>& x, LocalTensor<T>& y, int32_t n) {
    const uint32_t halfWidth = 16;
    LocalTensor<uint32_t> words = x.template ReinterpretCast<uint32_t>();
    ShiftLeft(acc.template ReinterpretCast<uint32_t>(), words, halfWidth, n / 2);
    ShiftRight(y.template ReinterpretCast<uint32_t>(), words, halfWidth, n / 2);
    PipeBarrier<PIPE_V>();
    LocalTensor<uint16_t> swapped = y.template ReinterpretCast<uint16_t>();
    Or(swapped, swapped, acc.template ReinterpretCast<uint16_t>(), n);
    PipeBarrier<PIPE_V>();
    Cast(acc, y, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
  }

  // cos/sin rows of a tile: one contiguous run, or one row repeated where they broadcast along the tile.
  __aicore__ inline void LoadTable(TQue<QuePosition::VECIN, BUFFER_NUM>& que, GlobalTensor<T>& gm, int64_t rRow,
                                   uint32_t rows) {
    const uint32_t rowBytes = t_.headDim * sizeof(T);
    LocalTensor<T> table = que.AllocTensor<T>();
    if (t_.rStrides[t_.tileAxis] != 0) {
      DataCopyPad(table, gm[rRow * t_.headDim], DataCopyExtParams(rows, rowBytes, 0, 0, 0), DataCopyPadExtParams<T>());
    } else {
      for (uint32_t r = 0; r < rows; ++r) {
        DataCopyPad(table[r * t_.rowPitch], gm[rRow * t_.headDim], DataCopyExtParams(1, rowBytes, 0, 0, 0),
                    DataCopyPadExtParams<T>());
      }
    }
    que.EnQue(table);
  }

  // First x row of the tile's rows in line (ownLine, shared).
  __aicore__ inline int64_t XRow(int64_t ownLine, int64_t shared, int64_t first) const {
    return LineRow(ownLine, shared) + first * t_.xStrides[t_.tileAxis];
  }

  __aicore__ inline void CopyIn(int64_t ownLine, int64_t shared, int64_t first, uint32_t rows, uint32_t lines) {
    const uint32_t rowBytes = t_.headDim * sizeof(T);
    const uint32_t xGap = static_cast<uint32_t>((t_.xStrides[t_.tileAxis] * t_.xRowElems - t_.headDim) * sizeof(T));
    LocalTensor<T> x = inX_.AllocTensor<T>();
    for (uint32_t line = 0; line < lines; ++line) {
      DataCopyPad(x[line * rows * t_.rowPitch], xGm_[XRow(ownLine, shared + line, first) * t_.xRowElems],
                  DataCopyExtParams(rows, rowBytes, xGap, 0, 0), DataCopyPadExtParams<T>());
    }
    inX_.EnQue(x);
  }

  // 2. out = x * cos + P(x) * sinT, accumulated in fp32
  __aicore__ inline void Compute(uint32_t rows) {
    const int32_t n = static_cast<int32_t>(rows * t_.rowPitch);
    LocalTensor<T> x = inX_.DeQue<T>();
    LocalTensor<float> xf = Widen(x, xFloatBuf_, n);
    LocalTensor<T> y = outY_.AllocTensor<T>();
    // fp32 accumulates in the output tile itself; fp16/bf16 in an fp32 buffer cast at the end
    LocalTensor<float> acc;
    if constexpr (IsFloat()) {
      acc = y.template ReinterpretCast<float>();
    } else {
      acc = accBuf_.Get<float>();
    }
    if (SwapsByShift()) {
      SwapPairs(acc, x, y, n);
    } else {
      PipeBarrier<PIPE_V>();
      Rotate(acc, xf, rows);
    }
    PipeBarrier<PIPE_V>();
    Mul(acc, acc, sinT_, n);
    PipeBarrier<PIPE_V>();
    MulAddDst(acc, xf, cosf_, n);
    if constexpr (!IsFloat()) {
      PipeBarrier<PIPE_V>();
      Cast(y, acc, RoundMode::CAST_RINT, static_cast<uint32_t>(n));  // one rounding to T
    }
    outY_.EnQue(y);
    inX_.FreeTensor(x);
  }

  // fp32 view of a tile: the tile itself for float, a widened copy otherwise.
  __aicore__ inline LocalTensor<float> Widen(LocalTensor<T>& src, TBuf<TPosition::VECCALC>& buf, int32_t n) {
    if constexpr (IsFloat()) {
      return src.template ReinterpretCast<float>();
    } else {
      LocalTensor<float> wide = buf.Get<float>();
      Cast(wide, src, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
      return wide;
    }
  }

  __aicore__ inline void CopyOut(int64_t ownLine, int64_t shared, int64_t first, uint32_t rows, uint32_t lines) {
    const uint32_t rowBytes = t_.headDim * sizeof(T);
    const uint32_t yGap = static_cast<uint32_t>((t_.xStrides[t_.tileAxis] * t_.xRowElems - t_.headDim) * sizeof(T));
    LocalTensor<T> y = outY_.DeQue<T>();
    for (uint32_t line = 0; line < lines; ++line) {
      DataCopyPad(yGm_[XRow(ownLine, shared + line, first) * t_.xRowElems], y[line * rows * t_.rowPitch],
                  DataCopyExtParams(rows, rowBytes, 0, yGap, 0));
    }
    outY_.FreeTensor(y);
  }

  RopeTilingData t_;
  GlobalTensor<T> xGm_, cosGm_, sinGm_, yGm_;
  TQue<QuePosition::VECIN, BUFFER_NUM> inX_, inCos_, inSin_;
  TQue<QuePosition::VECOUT, BUFFER_NUM> outY_;
  TBuf<TPosition::VECCALC> offsetBuf_, signBuf_, laneBuf_, accBuf_, xFloatBuf_, cosFloatBuf_, sinFloatBuf_;
  LocalTensor<T> cos_, sin_;            // the current task's cos/sin tiles (held across its lines)
  LocalTensor<float> cosf_, sinT_;      // their fp32 forms; sinT is sin with the signs (and P) folded in
};

// One tensor rotated from x into y on a pipe of its own (destroyed at return, draining every queue): the body
// of every RoPE kernel entry, direct and op package. fromLastBlock: apply_rotary_pos_emb's key part.
template <typename T>
__aicore__ inline void RopePass(GM_ADDR x, GM_ADDR cos, GM_ADDR sin, GM_ADDR y, const RopeTilingData& tilingData,
                                bool fromLastBlock = false) {
  TPipe pipe;
  KernelRope<T> op;
  op.Init(x, cos, sin, y, tilingData, &pipe);
  op.Process(fromLastBlock);
}

template <typename T>
__aicore__ inline void RunRope(GM_ADDR x, GM_ADDR cos, GM_ADDR sin, GM_ADDR y, GM_ADDR tiling) {
  RopeTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  RopePass<T>(x, cos, sin, y, tilingData);
}

// One entry per dtype (ROPE_DTYPES, tiling/rope_tiling_data.h); x, cos, sin, y share it (the host casts
// cos/sin to x's dtype).
#define ROPE_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(ROPE_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                           \
    RunRope<T>(x, cos, sin, y, tiling);                                       \
  }
ROPE_DTYPES(ROPE_ENTRY, rope)
#undef ROPE_ENTRY

// apply_rotary_pos_emb(_grad): query, then key, by every block of one launch, into queryOut / keyOut
// (the inputs themselves: in place, as the direct launch and the op package's ref outputs have it;
// a task reads its rows before it writes them). Each part has its own pipe (RopePass): their tiles differ
// (head counts, so tile lines), and a pipe's Destroy at the end of its pass drains every queue before the
// next part carves the same UB.
template <typename T>
__aicore__ inline void ApplyRopeParts(GM_ADDR query, GM_ADDR key, GM_ADDR cos, GM_ADDR sin, GM_ADDR queryOut,
                                      GM_ADDR keyOut, const ApplyRopeTilingData& tilingData) {
  if (tilingData.query.taskCount > 0) RopePass<T>(query, cos, sin, queryOut, tilingData.query);
  if (tilingData.key.taskCount > 0) RopePass<T>(key, cos, sin, keyOut, tilingData.key, true);
}

template <typename T>
__aicore__ inline void RunApplyRope(GM_ADDR query, GM_ADDR key, GM_ADDR cos, GM_ADDR sin, GM_ADDR tiling) {
  ApplyRopeTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  ApplyRopeParts<T>(query, key, cos, sin, query, key, tilingData);
}

#define APPLY_ROPE_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(APPLY_ROPE_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                 \
    RunApplyRope<T>(query, key, cos, sin, tiling);                                  \
  }
ROPE_DTYPES(APPLY_ROPE_ENTRY, apply_rope)
#undef APPLY_ROPE_ENTRY
