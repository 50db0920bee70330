// RMSNorm forward for rows shorter than a 32-byte block (tiling: NormPackedRows; D = hidden, a power of two,
// e.g. cann-bench's [1000003, 2] bf16). DataCopyPad would land each row padded to a block and the row kernel
// issues instructions per row; here a tile of R rows is one unpadded run of R * D elements, and every step
// is one instruction over the whole tile:
//   1. xf = float(x); sq = xf * xf
//   2. sum of each row's squares: one Gather transposes sq into D columns of R' (R rounded up to 8) in
//      bit-reversed column order, so folding column halves adds adjacent pairs first: ReduceSum's order
//   3. rstd = 1 / sqrt(sum / D + eps), R' values side by side (copied out as they are)
//   4. y = round_T((xf * rstd) * gamma): a Gather spreads each rstd over its row, gamma is tiled once
#pragma once
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "rms_norm_common.h"
#include "rms_norm_tiling_data.h"

template <typename T, typename G>
class KernelRmsNormPacked {
 public:
  __aicore__ inline KernelRmsNormPacked() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR rstd, const NormTilingData& tiling,
                              AscendC::TPipe* pipe) {
    using namespace AscendC;
    t_ = tiling;
    BlockTaskRange(t_.rowsPerBlock, t_.rowsRemainder, rowBegin_, rowCount_);
    const uint64_t total = static_cast<uint64_t>(t_.rows) * t_.hidden;
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), total);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y), total);
    rstdGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rstd), t_.rows);
    gammaGm_.SetGlobalBuffer(reinterpret_cast<__gm__ G*>(gamma), t_.hidden);
    const uint32_t elems = TileElems(), rows = t_.tileRows;
    pipe->InitBuffer(inX_, NORM_PACKED_BUFFER_NUM, elems * sizeof(T));
    pipe->InitBuffer(outY_, NORM_PACKED_BUFFER_NUM, elems * sizeof(T));
    pipe->InitBuffer(outRstd_, NORM_PACKED_BUFFER_NUM, rows * sizeof(float));
    pipe->InitBuffer(xfBuf_, IsFloat() ? 32 : elems * sizeof(float));  // fp32: x is read where it landed
    pipe->InitBuffer(sqBuf_, elems * sizeof(float));
    pipe->InitBuffer(sumBuf_, rows * sizeof(float));
    pipe->InitBuffer(onesBuf_, rows * sizeof(float));
    pipe->InitBuffer(gammaTileBuf_, elems * sizeof(float));
    if (t_.hidden > 1) {
      pipe->InitBuffer(partBuf_, elems / 2 * 3 * sizeof(float));  // the columns, then their first halving
      pipe->InitBuffer(transposeBuf_, elems * sizeof(int32_t));
      pipe->InitBuffer(spreadBuf_, elems * sizeof(int32_t));
    }
    pipe->InitBuffer(gammaRawBuf_, sizeof(G) == sizeof(float) ? 32 : t_.hidden * sizeof(G));  // fp32: unused
    pipe->InitBuffer(gammaBuf_, t_.hidden * sizeof(float));
  }

  __aicore__ inline void Process() {
    if (rowCount_ <= 0) return;
    LoadGammaFp32(gammaBuf_.Get<float>(), gammaRawBuf_, gammaGm_, 0, t_.hidden, t_.gammaOffset);
    InitTables();
    // tile i + 1 is loaded while tile i is computed
    for (int64_t done = 0; done < rowCount_; done += t_.tileRows) {
      if (done == 0) CopyIn(rowBegin_, TileRows(0));
      const int64_t next = done + t_.tileRows;
      if (next < rowCount_) CopyIn(rowBegin_ + next, TileRows(next));
      Compute(TileRows(done));
      CopyOut(rowBegin_ + done, TileRows(done));
    }
  }

 private:
  static constexpr int32_t NORM_PACKED_BUFFER_NUM = 2;
  static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }
  static __aicore__ inline uint32_t PaddedRows(uint32_t rows) { return (rows + 7) / 8 * 8; }
  __aicore__ inline uint32_t TileElems() const { return t_.tileRows * t_.hidden; }
  __aicore__ inline uint32_t TileRows(int64_t done) const {
    const int64_t left = rowCount_ - done;
    return static_cast<uint32_t>(left < t_.tileRows ? left : t_.tileRows);
  }
  // Column k of the transposed squares holds element BitReverse(k) of each row (log2(D) bits).
  __aicore__ inline uint32_t BitReverse(uint32_t k) const {
    uint32_t r = 0;
    for (uint32_t bit = 1; bit < t_.hidden; bit *= 2) r = r * 2 + ((k & bit) ? 1 : 0);
    return r;
  }

  // The first 8 entries of a table by the scalar unit, the rest by doubling: entries [k, 2k) are [0, k)
  // plus `step(k)` (gamma: a plain copy). D <= 8 divides 8, so every block of 8 entries starts a row.
  __aicore__ inline void InitTables() {
    using namespace AscendC;
    const uint32_t d = t_.hidden, elems = TileElems();
    LocalTensor<float> gammaF = gammaBuf_.Get<float>(), gammaTile = gammaTileBuf_.Get<float>();
    SyncPipes<HardEvent::V_S>();  // gamma was loaded and widened by the vector unit
    for (uint32_t i = 0; i < 8; ++i) gammaTile.SetValue(i, gammaF.GetValue(i % d));
    if (d > 1) {
      LocalTensor<int32_t> spread = spreadBuf_.Get<int32_t>(), base = transposeBuf_.Get<int32_t>();
      for (uint32_t i = 0; i < 8; ++i) {
        spread.SetValue(i, static_cast<int32_t>(i / d * sizeof(float)));  // element i reads rstd i / D
        base.SetValue(i, static_cast<int32_t>(i * d * sizeof(float)));     // row i starts here
      }
    }
    SyncPipes<HardEvent::S_V>();
    for (uint32_t k = 8; k < elems; k *= 2) {
      const uint32_t n = k < elems - k ? k : elems - k;
      DataCopy(gammaTile[k], gammaTile, n);
      if (d > 1) {
        LocalTensor<int32_t> spread = spreadBuf_.Get<int32_t>();
        Adds(spread[k], spread, static_cast<int32_t>(k / d * sizeof(float)), static_cast<int32_t>(n));
      }
      if (d > 1 && k < t_.tileRows) {
        LocalTensor<int32_t> base = transposeBuf_.Get<int32_t>();
        const uint32_t rows = k < t_.tileRows - k ? k : t_.tileRows - k;
        Adds(base[k], base, static_cast<int32_t>(k * d * sizeof(float)), static_cast<int32_t>(rows));
      }
      PipeBarrier<PIPE_V>();
    }
    Duplicate(onesBuf_.Get<float>(), 1.0f, static_cast<int32_t>(t_.tileRows));
    // the transpose of a short last tile reads its padding rows: defined from the start
    Duplicate(sqBuf_.Get<float>(), 0.0f, static_cast<int32_t>(elems));
    PipeBarrier<PIPE_V>();
    transposeRows_ = 0;
  }

  // Columns 1..D-1 of the transpose table for tiles of `padded` rows: entry k * padded + r is the byte offset
  // of row r's element BitReverse(k); column 0 (the row offsets) was built by InitTables for the longest tile.
  __aicore__ inline void BuildTranspose(uint32_t padded) {
    using namespace AscendC;
    LocalTensor<int32_t> table = transposeBuf_.Get<int32_t>();
    for (uint32_t k = 1; k < t_.hidden; ++k)
      Adds(table[k * padded], table, static_cast<int32_t>(BitReverse(k) * sizeof(float)), static_cast<int32_t>(padded));
    PipeBarrier<PIPE_V>();
    transposeRows_ = padded;
  }

  __aicore__ inline void CopyIn(int64_t row, uint32_t rows) {
    using namespace AscendC;
    LocalTensor<T> x = inX_.AllocTensor<T>();
    const DataCopyExtParams params(1, rows * t_.hidden * sizeof(T), 0, 0, 0);
    DataCopyPad(x, xGm_[static_cast<uint64_t>(row) * t_.hidden], params, DataCopyPadExtParams<T>());
    inX_.EnQue(x);
  }

  __aicore__ inline void Compute(uint32_t rows) {
    using namespace AscendC;
    const uint32_t d = t_.hidden, padded = PaddedRows(rows);
    const int32_t n = static_cast<int32_t>(rows * d);
    // 1. xf = float(x); sq = xf * xf
    LocalTensor<T> x = inX_.DeQue<T>();
    LocalTensor<float> xf;
    if constexpr (IsFloat()) {
      xf = x.template ReinterpretCast<float>();
    } else {
      xf = xfBuf_.Get<float>();
      Cast(xf, x, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
      inX_.FreeTensor(x);
      PipeBarrier<PIPE_V>();
    }
    LocalTensor<float> sq = sqBuf_.Get<float>(), sums = sumBuf_.Get<float>();
    Mul(sq, xf, xf, n);
    PipeBarrier<PIPE_V>();
    // 2. row sums: transpose, then fold column halves (the last fold writes sums)
    if (d == 1) {
      DataCopy(sums, sq, padded);
    } else {
      if (transposeRows_ != padded) BuildTranspose(padded);
      LocalTensor<float> part = partBuf_.Get<float>(), other = part[TileElems()];
      Gather(part, sq, transposeBuf_.Get<uint32_t>(), 0, padded * d);
      PipeBarrier<PIPE_V>();
      for (uint32_t cols = d; cols > 1; cols /= 2) {
        const LocalTensor<float> dst = cols == 2 ? sums : other;
        Add(dst, part, part[cols / 2 * padded], static_cast<int32_t>(cols / 2 * padded));
        PipeBarrier<PIPE_V>();
        const LocalTensor<float> c = part;
        part = other;
        other = c;
      }
    }
    // 3. rstd = 1 / sqrt(sum / D + eps), as the row kernel (RstdFromSums) computes it
    const int32_t slots = static_cast<int32_t>(padded);
    Muls(sums, sums, t_.invHidden, slots);
    PipeBarrier<PIPE_V>();
    Adds(sums, sums, t_.epsilon, slots);
    PipeBarrier<PIPE_V>();
    Sqrt(sums, sums, slots);
    PipeBarrier<PIPE_V>();
    Div(sums, onesBuf_.Get<float>(), sums, slots);
    PipeBarrier<PIPE_V>();
    LocalTensor<float> rstdOut = outRstd_.AllocTensor<float>();
    DataCopy(rstdOut, sums, padded);
    outRstd_.EnQue(rstdOut);
    // 4. y = (xf * rstd) * gamma in fp32, one rounding to T
    LocalTensor<float> rstdSpread = sums;
    if (d > 1) {
      rstdSpread = partBuf_.Get<float>();  // the folds are done with it
      Gather(rstdSpread, sums, spreadBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(n));
      PipeBarrier<PIPE_V>();
    }
    LocalTensor<T> y = outY_.AllocTensor<T>();
    LocalTensor<float> yf;
    if constexpr (IsFloat()) {
      yf = y.template ReinterpretCast<float>();
    } else {
      yf = sq;  // the squares were last read by step 2
    }
    Mul(yf, xf, rstdSpread, n);
    if constexpr (IsFloat()) inX_.FreeTensor(x);  // x's last read was issued
    PipeBarrier<PIPE_V>();
    Mul(yf, yf, gammaTileBuf_.Get<float>(), n);
    if constexpr (!IsFloat()) {
      PipeBarrier<PIPE_V>();
      Cast(y, yf, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
    }
    outY_.EnQue(y);
  }

  __aicore__ inline void CopyOut(int64_t row, uint32_t rows) {
    using namespace AscendC;
    LocalTensor<T> y = outY_.DeQue<T>();
    DataCopyPad(yGm_[static_cast<uint64_t>(row) * t_.hidden], y,
                DataCopyExtParams(1, rows * t_.hidden * sizeof(T), 0, 0, 0));
    outY_.FreeTensor(y);
    LocalTensor<float> rstd = outRstd_.DeQue<float>();
    DataCopyPad(rstdGm_[row], rstd, DataCopyExtParams(1, rows * sizeof(float), 0, 0, 0));
    outRstd_.FreeTensor(rstd);
  }

  NormTilingData t_;
  int64_t rowBegin_ = 0, rowCount_ = 0;
  AscendC::GlobalTensor<T> xGm_, yGm_;
  AscendC::GlobalTensor<float> rstdGm_;
  AscendC::GlobalTensor<G> gammaGm_;
  AscendC::TQue<AscendC::QuePosition::VECIN, NORM_PACKED_BUFFER_NUM> inX_;
  AscendC::TQue<AscendC::QuePosition::VECOUT, NORM_PACKED_BUFFER_NUM> outY_, outRstd_;
  AscendC::TBuf<AscendC::TPosition::VECCALC> xfBuf_, sqBuf_, sumBuf_, onesBuf_, gammaTileBuf_, partBuf_;
  AscendC::TBuf<AscendC::TPosition::VECCALC> transposeBuf_, spreadBuf_, gammaRawBuf_, gammaBuf_;
  uint32_t transposeRows_ = 0;  // tile rows (padded) the transpose table is built for
};
