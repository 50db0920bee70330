// RMSNorm forward (torch_npu npu_rms_norm) and AddRmsNorm forward (npu_add_rms_norm), for rows of
// any length N (the normalized dims, flattened):
//   add_rms_norm only:  x    = round_T(x1 + x2)             (the x output; the value normalized)
//                       rstd = 1 / sqrt(sum(x^2) / N + eps)  (fp32, one per row)
//                       y    = round_T((x * rstd) * gamma)    (fp32 throughout, one rounding)
// gated_rms_norm (HF Qwen3NextRMSNormGated) rounds as HF does:
//                       y    = round_T(round_G(gamma * round_T(x * rstd)) * silu(z))  (round_G: fp32 gamma none)
// NORM_SINGLE_PASS: tiles of whole rows; NORM_SPLIT_ROW: a row longer than UB is read twice in
// column chunks (pass 1 sums the squares, pass 2 normalizes). Reductions cover only the N valid
// columns (ReduceSum count form): DataCopyPad's padding past the row end is never summed.
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "rms_norm_common.h"
#include "rms_norm_packed.h"
#include "rms_norm_tiling_data.h"

using namespace AscendC;

constexpr int32_t NORM_BUFFER_NUM = 2;  // double buffering: load tile i+1 while computing tile i

template <typename T, typename G, bool ADD, bool GATE = false>
class KernelRmsNorm {
 public:
  __aicore__ inline KernelRmsNorm() {}

  __aicore__ inline void Init(GM_ADDR x1, GM_ADDR x2, GM_ADDR gamma, GM_ADDR y, GM_ADDR rstd, GM_ADDR xOut,
                              const NormTilingData& tiling, TPipe* pipe, GM_ADDR z = nullptr) {
    t_ = tiling;
    BlockTaskRange(t_.rowsPerBlock, t_.rowsRemainder, rowBegin_, rowCount_);
    const uint64_t total = static_cast<uint64_t>(t_.rows) * t_.hidden;
    x1Gm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x1), total);
    yGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(y), total);
    rstdGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rstd), t_.rows);
    gammaGm_.SetGlobalBuffer(reinterpret_cast<__gm__ G*>(gamma), t_.hidden);
    const uint32_t elems = t_.tileRows * t_.chunk;
    pipe->InitBuffer(inX1_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    pipe->InitBuffer(outY_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    if constexpr (ADD) {
      x2Gm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x2), total);
      xOutGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(xOut), total);
      pipe->InitBuffer(inX2_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
      pipe->InitBuffer(outX_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    }
    if constexpr (GATE) {
      zGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(z), total);
      pipe->InitBuffer(inZ_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
      pipe->InitBuffer(gateBuf_, elems * sizeof(float));
    }
    const bool xfUsed = !XInPlace() || t_.tilingKey != NORM_SINGLE_PASS;  // the tiling counts it only then
    pipe->InitBuffer(xfBuf_, xfUsed ? elems * sizeof(float) : 32);
    // short rows: the folds read whole blocks of 8 rows (a short tile's last block too)
    const uint32_t workElems = t_.shortRows ? PaddedRows(t_.tileRows) * t_.chunk : elems;
    pipe->InitBuffer(workBuf_, workElems * sizeof(float));
    if (t_.shortRows) {
      pipe->InitBuffer(foldBuf_, workElems * sizeof(float));
      pipe->InitBuffer(offBuf_, (1 + GatherCols() + t_.hidden) * PaddedRows(t_.tileRows) * sizeof(int32_t));
      pipe->InitBuffer(partBuf_, (GatherCols() * 3 / 2) * PaddedRows(t_.tileRows) * sizeof(float));
      pipe->InitBuffer(gammaTileBuf_, workElems * sizeof(float));
    }
    pipe->InitBuffer(sumBuf_, t_.tileRows * 8 * sizeof(float));
    const uint32_t rstdSlots = t_.shortRows ? PaddedRows(t_.tileRows) : t_.tileRows;  // short rows: a vector copy
    pipe->InitBuffer(outRstd_, static_cast<uint8_t>(t_.bufferNum), rstdSlots * sizeof(float));
    pipe->InitBuffer(tmpBuf_, t_.reduceTmpElems * sizeof(float));
    pipe->InitBuffer(gammaRawBuf_, sizeof(G) == sizeof(float) ? 32 : t_.chunk * sizeof(G));  // fp32: unused
    pipe->InitBuffer(gammaBuf_, t_.chunk * sizeof(float));
  }

  __aicore__ inline void Process() {
    if (rowCount_ <= 0) return;
    if (t_.tilingKey == NORM_SINGLE_PASS) {
      LoadGamma(0, t_.hidden);  // one gamma row serves every tile of the block
      if (t_.shortRows) InitShortRows();
      // With two buffers tile i+1 is loaded before tile i is computed: its load is issued before
      // the scalar unit waits for tile i's row sums (V_S), so MTE2 streams while V works.
      const bool prefetch = t_.bufferNum >= 2;
      for (int64_t done = 0; done < rowCount_; done += t_.tileRows) {
        if (done == 0 || !prefetch) CopyIn(rowBegin_ + done, TileRows(done), 0, t_.hidden, GATE);
        const int64_t next = done + t_.tileRows;
        if (prefetch && next < rowCount_) CopyIn(rowBegin_ + next, TileRows(next), 0, t_.hidden, GATE);
        ProcessTile(rowBegin_ + done, TileRows(done));
      }
    } else {
      for (int64_t row = rowBegin_; row < rowBegin_ + rowCount_; ++row) ProcessLongRow(row);
    }
  }

 private:
  static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }
  // fp32 single-pass tiles read x where it already is, with no fp32 copy (one V pass fewer): rms_norm
  // in its input buffer, add_rms_norm in its x output (sent out after y's scaling instead of first).
  // The buffer is held until the tile's last read of x; with two buffers the next load went to the other.
  static constexpr bool XInPlace() { return IsFloat(); }

  static __aicore__ inline uint32_t PaddedRows(uint32_t rows) { return (rows + 7) / 8 * 8; }
  __aicore__ inline uint32_t GatherCols() const {
    return t_.hidden < NORM_SHORT_GATHER_COLS ? t_.hidden : NORM_SHORT_GATHER_COLS;
  }

  // Short rows: offBuf_'s first PaddedRows(tileRows) ints are each row's byte offset in a tile; the fold
  // buffers start defined, since a short tile's last block of 8 rows is folded and gathered whole.
  __aicore__ inline void InitShortRows() {
    LocalTensor<int32_t> base = offBuf_.Get<int32_t>();
    const uint32_t padded = PaddedRows(t_.tileRows);
    const int32_t rowBytes = static_cast<int32_t>(t_.hidden * sizeof(float));
    for (uint32_t r = 0; r < 8; ++r) base.SetValue(r, static_cast<int32_t>(r) * rowBytes);
    SyncPipes<HardEvent::S_V>();
    for (uint32_t k = 8; k < padded; k *= 2) {  // doubling: rows [k, 2k) are rows [0, k) plus k rows
      Adds(base[k], base, static_cast<int32_t>(k) * rowBytes, static_cast<int32_t>(k < padded - k ? k : padded - k));
      PipeBarrier<PIPE_V>();
    }
    const int32_t workElems = static_cast<int32_t>(padded * t_.chunk);
    // the broadcast table: every element of row r reads rstd r (byte 4 r), rows doubled as above
    LocalTensor<int32_t> spread = SpreadTable();
    Duplicate(spread, 0, static_cast<int32_t>(t_.hidden));
    PipeBarrier<PIPE_V>();
    for (uint32_t k = 1; k < padded; k *= 2) {
      Adds(spread[k * t_.hidden], spread, static_cast<int32_t>(k * sizeof(float)),
           static_cast<int32_t>((k < padded - k ? k : padded - k) * t_.hidden));
      PipeBarrier<PIPE_V>();
    }
    Duplicate(workBuf_.Get<float>(), 0.0f, workElems);
    Duplicate(foldBuf_.Get<float>(), 0.0f, workElems);
    // gamma once per row of the tile (by doubling): one Mul applies it to a whole tile
    LocalTensor<float> gammaTile = gammaTileBuf_.Get<float>();
    DataCopy(gammaTile, gammaBuf_.Get<float>(), t_.hidden);
    PipeBarrier<PIPE_V>();
    for (uint32_t k = 1; k < padded; k *= 2) {
      DataCopy(gammaTile[k * t_.hidden], gammaTile, (k < padded - k ? k : padded - k) * t_.hidden);
      PipeBarrier<PIPE_V>();
    }
    tableRows_ = 0;
  }

  __aicore__ inline LocalTensor<int32_t> SpreadTable() {
    return offBuf_.Get<int32_t>()[(1 + GatherCols()) * PaddedRows(t_.tileRows)];
  }

  // The gather table for tiles of `padded` rows: entry j * padded + r is row r's column j (j < GatherCols()),
  // so the gather lays each row's partial sums out column by column.
  __aicore__ inline void BuildTable(uint32_t padded) {
    LocalTensor<int32_t> base = offBuf_.Get<int32_t>();
    LocalTensor<int32_t> table = base[PaddedRows(t_.tileRows)];
    for (uint32_t j = 0; j < GatherCols(); ++j)
      Adds(table[j * padded], base, static_cast<int32_t>(j * sizeof(float)), static_cast<int32_t>(padded));
    PipeBarrier<PIPE_V>();
    tableRows_ = padded;
  }

  // sums[r] = sum of row r's squares in `sq` (rows of N floats, N a power of two): each level adds every
  // row's upper half onto its lower half with one instruction over the whole tile (the sums it also forms
  // across row boundaries are never read), down to GatherCols() columns; one Gather transposes those to
  // GatherCols() x padded, and Adds of column halves finish. ~log2(N) + 3 instructions per tile, not ~3 per row.
  __aicore__ inline void SumShortRows(const LocalTensor<float>& sums, const LocalTensor<float>& sq, uint32_t rows) {
    const uint32_t padded = PaddedRows(rows);
    LocalTensor<float> a = sq, b = foldBuf_.Get<float>();
    int32_t count = static_cast<int32_t>(rows * t_.hidden);
    for (uint32_t h = t_.hidden / 2; h >= GatherCols(); h /= 2) {
      count -= static_cast<int32_t>(h);
      Add(b, a, a[h], count);
      PipeBarrier<PIPE_V>();
      const LocalTensor<float> c = a;
      a = b;
      b = c;
    }
    if (tableRows_ != padded) BuildTable(padded);
    uint32_t cols = GatherCols();
    LocalTensor<float> part = partBuf_.Get<float>();
    LocalTensor<float> other = part[cols * padded];
    LocalTensor<uint32_t> table = offBuf_.Get<uint32_t>()[PaddedRows(t_.tileRows)];
    Gather(part, a, table, 0, cols * padded);
    PipeBarrier<PIPE_V>();
    for (; cols > 1; cols /= 2) {  // column j + cols / 2 onto column j; the last level writes sums
      const LocalTensor<float> dst = cols == 2 ? sums : other;
      Add(dst, part, part[cols / 2 * padded], static_cast<int32_t>(cols / 2 * padded));
      PipeBarrier<PIPE_V>();
      const LocalTensor<float> c = part;
      part = other;
      other = c;
    }
  }

  __aicore__ inline uint32_t TileRows(int64_t done) const {
    const int64_t left = rowCount_ - done;
    return static_cast<uint32_t>(left < t_.tileRows ? left : t_.tileRows);
  }

  __aicore__ inline void LoadGamma(uint32_t col, uint32_t len) {
    LoadGammaFp32(gammaBuf_.Get<float>(), gammaRawBuf_, gammaGm_, col, len, t_.gammaOffset);
  }

  // `rows` rows of x1 (and x2; and z `withZ`), columns [col, col + len), into the input queues.
  __aicore__ inline void CopyIn(int64_t row, uint32_t rows, uint32_t col, uint32_t len, bool withZ = false) {
    const DataCopyExtParams params(static_cast<uint16_t>(rows), len * sizeof(T), (t_.hidden - len) * sizeof(T), 0, 0);
    const uint64_t at = static_cast<uint64_t>(row) * t_.hidden + col;
    LocalTensor<T> x1 = inX1_.AllocTensor<T>();
    DataCopyPad(x1, x1Gm_[at], params, DataCopyPadExtParams<T>());
    inX1_.EnQue(x1);
    if constexpr (ADD) {
      LocalTensor<T> x2 = inX2_.AllocTensor<T>();
      DataCopyPad(x2, x2Gm_[at], params, DataCopyPadExtParams<T>());
      inX2_.EnQue(x2);
    }
    if constexpr (GATE) {
      if (withZ) {
        LocalTensor<T> z = inZ_.AllocTensor<T>();
        DataCopyPad(z, zGm_[at], params, DataCopyPadExtParams<T>());
        inZ_.EnQue(z);
      }
    }
  }

  // gated_rms_norm, after y = x * rstd: round_T, the weight (rounded to G when G is narrower than fp32, as
  // HF's `weight * h` in the weight's dtype), then y *= silu(z) in fp32 with silu(z) = z / (1 + exp(-z))
  // (-0 for z -> -inf, as torch's). `scratch`: n floats free by now (xf) for a narrow z widened.
  __aicore__ inline void WeightAndGate(const LocalTensor<T>& t, const LocalTensor<float>& yf,
                                       const LocalTensor<float>& gammaF, const LocalTensor<float>& scratch,
                                       uint32_t rows, uint32_t pitch, uint32_t len, int32_t n) {
    RoundToT(t, yf, n);
    for (uint32_t r = 0; r < rows; ++r) Mul(yf[r * pitch], yf[r * pitch], gammaF, static_cast<int32_t>(len));
    PipeBarrier<PIPE_V>();
    if constexpr (sizeof(G) < sizeof(float)) RoundToT(t, yf, n);  // G narrow: G is T (op_proto)
    LocalTensor<T> z = inZ_.DeQue<T>();
    LocalTensor<float> zf = scratch;
    if constexpr (IsFloat()) {
      zf = z.template ReinterpretCast<float>();
    } else {
      Cast(zf, z, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
      PipeBarrier<PIPE_V>();
    }
    LocalTensor<float> e = gateBuf_.Get<float>();
    Muls(e, zf, -1.0f, n);
    PipeBarrier<PIPE_V>();
    Exp(e, e, n);
    PipeBarrier<PIPE_V>();
    Adds(e, e, 1.0f, n);
    PipeBarrier<PIPE_V>();
    Div(e, zf, e, n);
    PipeBarrier<PIPE_V>();
    inZ_.FreeTensor(z);  // z's last read was issued
    Mul(yf, yf, e, n);
  }

  // 1. xf = float(x1), or for add_rms_norm xf = float(round_T(x1 + x2)) with the rounded sum
  //    enqueued as the x output when `emitX` (pass 2 of a long row recomputes it, bit-identical).
  __aicore__ inline void LoadAsFloat(LocalTensor<float>& xf, int32_t n, bool emitX) {
    LocalTensor<T> x1 = inX1_.DeQue<T>();
    if constexpr (!ADD) {
      ToFloat(xf, x1, n);
    } else {
      LocalTensor<T> x2 = inX2_.DeQue<T>();
      LocalTensor<T> xo = outX_.AllocTensor<T>();
      if constexpr (IsFloat()) {
        Add(xo, x1, x2, n);  // fp32: the sum is already rounded once
        PipeBarrier<PIPE_V>();
        DataCopy(xf, xo, static_cast<uint32_t>(n));
      } else {
        LocalTensor<float> w = workBuf_.Get<float>();
        Cast(xf, x1, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
        Cast(w, x2, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
        PipeBarrier<PIPE_V>();
        Add(xf, xf, w, n);
        PipeBarrier<PIPE_V>();
        Cast(xo, xf, RoundMode::CAST_RINT, static_cast<uint32_t>(n));  // one rounding to T
        PipeBarrier<PIPE_V>();
        Cast(xf, xo, RoundMode::CAST_NONE, static_cast<uint32_t>(n));  // normalize the rounded x
      }
      inX2_.FreeTensor(x2);
      if (emitX) {
        outX_.EnQue(xo);
      } else {
        outX_.FreeTensor(xo);
      }
    }
    inX1_.FreeTensor(x1);
    PipeBarrier<PIPE_V>();
  }

  __aicore__ inline void ToFloat(LocalTensor<float>& dst, LocalTensor<T>& src, int32_t n) {
    if constexpr (IsFloat()) {
      DataCopy(dst, src.template ReinterpretCast<float>(), static_cast<uint32_t>(n));
    } else {
      Cast(dst, src, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
    }
  }

  // 3. rstd = 1 / sqrt(sums / N + eps) for `slots` sums 8 floats apart (lanes 1..7 are scratch).
  __aicore__ inline void RstdFromSums(LocalTensor<float>& sums, uint32_t slots) {
    const int32_t n = static_cast<int32_t>(slots * 8);
    LocalTensor<float> ones = workBuf_.Get<float>();
    Duplicate(ones, 1.0f, n);
    Muls(sums, sums, t_.invHidden, n);
    PipeBarrier<PIPE_V>();
    Adds(sums, sums, t_.epsilon, n);
    PipeBarrier<PIPE_V>();
    Sqrt(sums, sums, n);
    PipeBarrier<PIPE_V>();
    Div(sums, ones, sums, n);
    SyncPipes<HardEvent::V_S>();  // the scalar unit reads the rstd values next
  }

  // Single-pass: `rows` whole rows starting at `row`, already in the input queues (Process).
  __aicore__ inline void ProcessTile(int64_t row, uint32_t rows) {
    const uint32_t n = t_.hidden, pitch = t_.rowPitch;
    const int32_t tileElems = static_cast<int32_t>(rows * pitch);
    LocalTensor<T> x1;
    LocalTensor<float> xf;
    LocalTensor<T> xo;
    if constexpr (XInPlace() && !ADD) {
      x1 = inX1_.DeQue<T>();
      xf = x1.template ReinterpretCast<float>();
    } else if constexpr (XInPlace()) {
      x1 = inX1_.DeQue<T>();
      LocalTensor<T> x2 = inX2_.DeQue<T>();
      xo = outX_.AllocTensor<T>();
      Add(xo, x1, x2, tileElems);  // fp32: the sum is already rounded once
      inX1_.FreeTensor(x1);
      inX2_.FreeTensor(x2);
      PipeBarrier<PIPE_V>();
      xf = xo.template ReinterpretCast<float>();
    } else {
      xf = xfBuf_.Get<float>();
      LoadAsFloat(xf, tileElems, true);
      if constexpr (ADD) CopyOutX(row, rows, 0, n);
    }

    // 2. sum of squares of each row's N valid columns
    LocalTensor<float> work = workBuf_.Get<float>();
    LocalTensor<float> sums = sumBuf_.Get<float>();
    LocalTensor<float> tmp = tmpBuf_.Get<float>();
    Mul(work, xf, xf, tileElems);
    PipeBarrier<PIPE_V>();
    if (t_.shortRows) {
      SumShortRows(sums, work, rows);
    } else {
      FoldSumRows(sums, work, tmp, n, rows, pitch);
    }
    // 3. rstd per row: sums 8 floats apart, or (short rows) adjacent
    const uint32_t slot = t_.shortRows ? 1 : 8;
    RstdFromSums(sums, t_.shortRows ? PaddedRows(rows) / 8 : rows);

    // 4. y = (x * rstd) * gamma in fp32; 5. one rounding to T
    LocalTensor<T> y = outY_.AllocTensor<T>();
    LocalTensor<float> rstdOut = outRstd_.AllocTensor<float>();
    LocalTensor<float> yf;
    if constexpr (IsFloat()) {
      yf = y.template ReinterpretCast<float>();
    } else {
      yf = work;
    }
    LocalTensor<float> gammaF = gammaBuf_.Get<float>();
    // Short rows: rstd out by a vector copy; the later half of the rows scaled by a Gather that spreads each
    // rstd over its row (the vector unit works on it while the scalar unit issues the first half's Muls)
    const uint32_t scalarRows = t_.shortRows ? rows * 2 / 3 : rows;
    if (t_.shortRows) {
      DataCopy(rstdOut, sums, PaddedRows(rows));
      const uint32_t at = scalarRows * pitch;
      LocalTensor<float> rstdSpread = foldBuf_.Get<float>();  // the folds are done with it
      Gather(rstdSpread[at], sums, SpreadTable()[at].template ReinterpretCast<uint32_t>(), 0,
             static_cast<uint32_t>(tileElems) - at);
      PipeBarrier<PIPE_V>();
      Mul(yf[at], xf[at], rstdSpread[at], tileElems - static_cast<int32_t>(at));
    }
    for (uint32_t r = 0; r < scalarRows; ++r) {  // all rows' scaling, then one barrier, then all rows' gamma
      const float rstd = sums.GetValue(r * slot);
      if (!t_.shortRows) rstdOut.SetValue(r, rstd);
      Muls(yf[r * pitch], xf[r * pitch], rstd, static_cast<int32_t>(n));
    }
    if constexpr (XInPlace() && !ADD) inX1_.FreeTensor(x1);  // x's last read was issued
    if constexpr (XInPlace() && ADD) {
      outX_.EnQue(xo);
      CopyOutX(row, rows, 0, n);
    }
    PipeBarrier<PIPE_V>();
    if constexpr (GATE) {
      WeightAndGate(y, yf, gammaF, xf, rows, pitch, n, tileElems);  // no short rows (NormShortRows)
    } else if (t_.shortRows) {
      Mul(yf, yf, gammaTileBuf_.Get<float>(), tileElems);  // rows are unpadded: the tile is one run
    } else {
      for (uint32_t r = 0; r < rows; ++r) Mul(yf[r * pitch], yf[r * pitch], gammaF, static_cast<int32_t>(n));
    }
    if constexpr (!IsFloat()) {
      PipeBarrier<PIPE_V>();
      Cast(y, yf, RoundMode::CAST_RINT, static_cast<uint32_t>(tileElems));
    }
    outY_.EnQue(y);
    if (!t_.shortRows) SyncPipes<HardEvent::S_MTE3>();  // rstdOut was written by the scalar unit
    outRstd_.EnQue(rstdOut);
    CopyOutY(row, rows, 0, n);
    CopyOutRstd(row, rows);
  }

  // Split-row: one row in column chunks, read twice.
  __aicore__ inline void ProcessLongRow(int64_t row) {
    LocalTensor<float> xf = xfBuf_.Get<float>();
    LocalTensor<float> work = workBuf_.Get<float>();
    LocalTensor<float> sums = sumBuf_.Get<float>();
    LocalTensor<float> tmp = tmpBuf_.Get<float>();
    // Pass 1. sum of squares, chunk by chunk (each chunk reduced over its valid columns only)
    float sumSq = 0.0f;
    for (uint32_t c = 0; c < t_.chunkCount; ++c) {
      const uint32_t col = c * t_.chunk;
      const uint32_t len = ChunkLen(col);
      const int32_t landed = static_cast<int32_t>(PaddedLen<T>(len));
      CopyIn(row, 1, col, len);
      LoadAsFloat(xf, landed, true);
      if constexpr (ADD) CopyOutX(row, 1, col, len);
      Mul(work, xf, xf, landed);
      PipeBarrier<PIPE_V>();
      FoldSum(sums, work, tmp, len);
      SyncPipes<HardEvent::V_S>();
      sumSq += sums.GetValue(0);
    }
    sums.SetValue(0, sumSq);
    SyncPipes<HardEvent::S_V>();  // the vector unit reads the scalar-written sum next
    RstdFromSums(sums, 1);
    const float rstd = sums.GetValue(0);
    LocalTensor<float> rstdOut = outRstd_.AllocTensor<float>();
    rstdOut.SetValue(0, rstd);
    SyncPipes<HardEvent::S_MTE3>();
    outRstd_.EnQue(rstdOut);
    CopyOutRstd(row, 1);

    // Pass 2. y = (x * rstd) * gamma, chunk by chunk
    LocalTensor<float> gammaF = gammaBuf_.Get<float>();
    for (uint32_t c = 0; c < t_.chunkCount; ++c) {
      const uint32_t col = c * t_.chunk;
      const uint32_t len = ChunkLen(col);
      const int32_t landed = static_cast<int32_t>(PaddedLen<T>(len));
      LoadGamma(col, len);
      CopyIn(row, 1, col, len, GATE);
      LoadAsFloat(xf, landed, false);
      LocalTensor<T> y = outY_.AllocTensor<T>();
      LocalTensor<float> yf;
      if constexpr (IsFloat()) {
        yf = y.template ReinterpretCast<float>();
      } else {
        yf = work;
      }
      Muls(yf, xf, rstd, static_cast<int32_t>(len));
      PipeBarrier<PIPE_V>();
      if constexpr (GATE) {
        WeightAndGate(y, yf, gammaF, xf, 1, 0, len, landed);
      } else {
        Mul(yf, yf, gammaF, static_cast<int32_t>(len));
      }
      if constexpr (!IsFloat()) {
        PipeBarrier<PIPE_V>();
        Cast(y, yf, RoundMode::CAST_RINT, static_cast<uint32_t>(landed));
      }
      outY_.EnQue(y);
      CopyOutY(row, 1, col, len);
    }
  }

  __aicore__ inline uint32_t ChunkLen(uint32_t col) const { return NormChunkLen(t_, col); }

  __aicore__ inline void CopyOutY(int64_t row, uint32_t rows, uint32_t col, uint32_t len) {
    LocalTensor<T> y = outY_.DeQue<T>();
    DataCopyPad(yGm_[static_cast<uint64_t>(row) * t_.hidden + col], y,
                DataCopyExtParams(static_cast<uint16_t>(rows), len * sizeof(T), 0, (t_.hidden - len) * sizeof(T), 0));
    outY_.FreeTensor(y);
  }

  __aicore__ inline void CopyOutX(int64_t row, uint32_t rows, uint32_t col, uint32_t len) {
    if constexpr (ADD) {
      LocalTensor<T> xo = outX_.DeQue<T>();
      DataCopyPad(xOutGm_[static_cast<uint64_t>(row) * t_.hidden + col], xo,
                  DataCopyExtParams(static_cast<uint16_t>(rows), len * sizeof(T), 0, (t_.hidden - len) * sizeof(T), 0));
      outX_.FreeTensor(xo);
    }
  }

  __aicore__ inline void CopyOutRstd(int64_t row, uint32_t rows) {
    LocalTensor<float> rstdOut = outRstd_.DeQue<float>();
    DataCopyPad(rstdGm_[row], rstdOut, DataCopyExtParams(1, rows * sizeof(float), 0, 0, 0));
    outRstd_.FreeTensor(rstdOut);
  }

  NormTilingData t_;
  int64_t rowBegin_ = 0, rowCount_ = 0;
  GlobalTensor<T> x1Gm_, x2Gm_, yGm_, xOutGm_, zGm_;
  GlobalTensor<float> rstdGm_;
  GlobalTensor<G> gammaGm_;
  TQue<QuePosition::VECIN, NORM_BUFFER_NUM> inX1_, inX2_, inZ_;
  TQue<QuePosition::VECOUT, NORM_BUFFER_NUM> outY_, outX_, outRstd_;
  TBuf<TPosition::VECCALC> xfBuf_, workBuf_, sumBuf_, tmpBuf_, gammaRawBuf_, gammaBuf_;
  TBuf<TPosition::VECCALC> foldBuf_, offBuf_, partBuf_, gammaTileBuf_;  // short rows only
  TBuf<TPosition::VECCALC> gateBuf_;                                    // gated only: silu(z) in fp32
  uint32_t tableRows_ = 0;                              // rows the gather table is built for
};

// The forward kernel the tiling chose (also the op package's entries, csrc/kernels/op_package/).
template <typename T, typename G, bool ADD, bool GATE = false>
__aicore__ inline void ProcessRmsNorm(GM_ADDR x1, GM_ADDR x2, GM_ADDR gamma, GM_ADDR y, GM_ADDR rstd, GM_ADDR xOut,
                                      const NormTilingData& tilingData, TPipe* pipe, GM_ADDR z = nullptr) {
  if constexpr (!ADD && !GATE) {
    if (tilingData.packedRows) {  // rows shorter than a 32-byte block (rms_norm_packed.h)
      KernelRmsNormPacked<T, G> packed;
      packed.Init(x1, gamma, y, rstd, tilingData, pipe);
      packed.Process();
      return;
    }
  }
  KernelRmsNorm<T, G, ADD, GATE> op;
  op.Init(x1, x2, gamma, y, rstd, xOut, tilingData, pipe, z);
  op.Process();
}

template <typename T, typename G, bool ADD, bool GATE = false>
__aicore__ inline void RunRmsNorm(GM_ADDR x1, GM_ADDR x2, GM_ADDR gamma, GM_ADDR y, GM_ADDR rstd, GM_ADDR xOut,
                                  GM_ADDR tiling, GM_ADDR z = nullptr) {
  NormTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  TPipe pipe;
  ProcessRmsNorm<T, G, ADD, GATE>(x1, x2, gamma, y, rstd, xOut, tilingData, &pipe, z);
}

// One entry per (x, gamma) dtype pair (RMS_NORM_DTYPES, tiling/rms_norm_tiling_data.h).
#define RMS_NORM_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(RMS_NORM_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                               \
    RunRmsNorm<T, G, false>(x, x, gamma, y, rstd, y, tiling);                     \
  }
#define ADD_RMS_NORM_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(ADD_RMS_NORM_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                   \
    RunRmsNorm<T, G, true>(x1, x2, gamma, y, rstd, x, tiling);                        \
  }
#define GATED_RMS_NORM_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(GATED_RMS_NORM_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                     \
    RunRmsNorm<T, G, false, true>(x, x, gamma, y, rstd, y, tiling, z);                  \
  }
RMS_NORM_DTYPES(RMS_NORM_ENTRY, rms_norm)
ADD_RMS_NORM_DTYPES(ADD_RMS_NORM_ENTRY, add_rms_norm)
GATED_RMS_NORM_DTYPES(GATED_RMS_NORM_ENTRY, gated_rms_norm)
#undef RMS_NORM_ENTRY
#undef ADD_RMS_NORM_ENTRY
#undef GATED_RMS_NORM_ENTRY
