// RMSNorm backward (rms_norm_grad, add_rms_norm_grad) for rows of any length N, with
// dg = dy * gamma (all fp32):
//   dx     = rstd * dg - x * (rstd^3 * sum(dg * x) / N)
//            [+ dx_out for add_rms_norm_grad: the gradient flowing into its x output]
//   dgamma = sum over rows of dy * xhat
// gated_rms_norm_grad (GATE; the forward y = round_T(h * silu(z)), h = round_G(gamma * round_T(x * rstd))):
//   dy' = dy * silu(z) feeds dx and dgamma above (the roundings' derivatives taken as 1, as autograd does)
//   dz  = dy * h * silu'(z), silu'(z) = s * (1 + z * (1 - s)), s = sigmoid(z); h rebuilt as the forward made it
// dgamma is deterministic: each block accumulates its rows in fp32 into its own row of the
// workspace (partials [blockDim, N]); the second kernel, rms_norm_dgamma_*, sums those rows in
// block order and rounds once to gamma's dtype.
// NORM_SINGLE_PASS: tiles of whole rows, the block's dgamma row accumulated in UB.
// NORM_SPLIT_ROW: groups of up to NORM_SPLIT_GROUP_ROWS rows; pass 1 reduces each row chunk by
// chunk; pass 2 walks the chunks, updating that chunk's dgamma partial for every row of the group.
// Buffers: fp32 computes on dy and x where they landed and writes dx (and its scratch) in the dx
// output buffer: no fp32 work buffer. fp16/bf16 widen dy and x into dyf, xf and use one fp32 work
// buffer; dg overwrites dy once dy * rstd (the dgamma term) has been taken. Every product, sum and
// rounding is the formula's own, in the same order, whichever buffers hold them.
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "rms_norm_common.h"
#include "rms_norm_tiling_data.h"

using namespace AscendC;

constexpr int32_t NORM_GRAD_BUFFER_NUM = 2;

template <typename T, typename G, bool ADD, bool GATE = false>
class KernelRmsNormGrad {
 public:
  __aicore__ inline KernelRmsNormGrad() {}

  __aicore__ inline void Init(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dxOut, GM_ADDR dx,
                              GM_ADDR partials, const NormTilingData& tiling, TPipe* pipe, GM_ADDR z = nullptr,
                              GM_ADDR dz = nullptr) {
    t_ = tiling;
    BlockTaskRange(t_.rowsPerBlock, t_.rowsRemainder, rowBegin_, rowCount_);
    const uint64_t total = static_cast<uint64_t>(t_.rows) * t_.hidden;
    dyGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy), total);
    xGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(x), total);
    dxGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dx), total);
    rstdGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rstd), t_.rows);
    gammaGm_.SetGlobalBuffer(reinterpret_cast<__gm__ G*>(gamma), t_.hidden);
    partGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials) + GetBlockIdx() * t_.hidden, t_.hidden);
    const uint32_t elems = t_.tileRows * t_.chunk;
    pipe->InitBuffer(inDy_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    pipe->InitBuffer(inX_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    pipe->InitBuffer(outDx_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    if constexpr (ADD) {
      dxOutGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dxOut), total);
      if (!t_.dxOutLate) pipe->InitBuffer(inDxOut_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
    }
    if constexpr (!IsFloat()) {  // the tiling counts these three only for fp16/bf16
      pipe->InitBuffer(dyfBuf_, elems * sizeof(float));
      pipe->InitBuffer(xfBuf_, elems * sizeof(float));
      pipe->InitBuffer(workBuf_, elems * sizeof(float));
    }
    if constexpr (GATE) {  // z in, dz out, the gate's fp32 buffer (and for fp16/bf16 z widened)
      zGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(z), total);
      dzGm_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dz), total);
      pipe->InitBuffer(inZ_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
      pipe->InitBuffer(outDz_, static_cast<uint8_t>(t_.bufferNum), elems * sizeof(T));
      pipe->InitBuffer(gateBuf_, elems * sizeof(float));
      if constexpr (!IsFloat()) pipe->InitBuffer(zfBuf_, elems * sizeof(float));
    }
    pipe->InitBuffer(sumBuf_, t_.tileRows * 8 * sizeof(float));
    pipe->InitBuffer(tmpBuf_, t_.reduceTmpElems * sizeof(float));
    pipe->InitBuffer(gammaRawBuf_, sizeof(G) == sizeof(float) ? 32 : t_.chunk * sizeof(G));  // fp32: unused
    pipe->InitBuffer(gammaBuf_, t_.chunk * sizeof(float));
    pipe->InitBuffer(accBuf_, t_.chunk * sizeof(float));
  }

  __aicore__ inline void Process() {
    if (rowCount_ <= 0) return;
    if (t_.tilingKey == NORM_SINGLE_PASS) {
      LoadGamma(0, t_.hidden);
      LocalTensor<float> acc = accBuf_.Get<float>();
      Duplicate(acc, 0.0f, static_cast<int32_t>(t_.rowPitch));
      PipeBarrier<PIPE_V>();
      // With two buffers tile i+1 is loaded before tile i is computed (as in the forward kernel).
      const bool prefetch = t_.bufferNum >= 2;
      for (int64_t done = 0; done < rowCount_; done += t_.tileRows) {
        if (done == 0 || !prefetch) CopyIn(rowBegin_ + done, TileRows(done), 0, t_.hidden, true);
        const int64_t next = done + t_.tileRows;
        if (prefetch && next < rowCount_) CopyIn(rowBegin_ + next, TileRows(next), 0, t_.hidden, true);
        ProcessTile(rowBegin_ + done, TileRows(done));
      }
      StorePartial(0, t_.hidden);
    } else {
      for (int64_t done = 0; done < rowCount_; done += NORM_SPLIT_GROUP_ROWS) {
        const int64_t left = rowCount_ - done;
        ProcessGroup(rowBegin_ + done,
                     static_cast<uint32_t>(left < NORM_SPLIT_GROUP_ROWS ? left : NORM_SPLIT_GROUP_ROWS), done == 0);
      }
    }
  }

 private:
  static constexpr bool IsFloat() { return sizeof(T) == sizeof(float); }

  __aicore__ inline uint32_t TileRows(int64_t done) const {
    const int64_t left = rowCount_ - done;
    return static_cast<uint32_t>(left < t_.tileRows ? left : t_.tileRows);
  }

  __aicore__ inline uint32_t ChunkLen(uint32_t col) const { return NormChunkLen(t_, col); }

  __aicore__ inline void LoadGamma(uint32_t col, uint32_t len) {
    LoadGammaFp32(gammaBuf_.Get<float>(), gammaRawBuf_, gammaGm_, col, len, t_.gammaOffset);
  }

  __aicore__ inline void CopyIn(int64_t row, uint32_t rows, uint32_t col, uint32_t len, bool withDxOut) {
    const DataCopyExtParams params(static_cast<uint16_t>(rows), len * sizeof(T), (t_.hidden - len) * sizeof(T), 0, 0);
    const uint64_t at = static_cast<uint64_t>(row) * t_.hidden + col;
    LocalTensor<T> dy = inDy_.AllocTensor<T>();
    DataCopyPad(dy, dyGm_[at], params, DataCopyPadExtParams<T>());
    inDy_.EnQue(dy);
    LocalTensor<T> x = inX_.AllocTensor<T>();
    DataCopyPad(x, xGm_[at], params, DataCopyPadExtParams<T>());
    inX_.EnQue(x);
    if constexpr (GATE) {  // both passes read the gate
      LocalTensor<T> z = inZ_.AllocTensor<T>();
      DataCopyPad(z, zGm_[at], params, DataCopyPadExtParams<T>());
      inZ_.EnQue(z);
    }
    if constexpr (ADD) {
      if (withDxOut && !t_.dxOutLate) {
        LocalTensor<T> d = inDxOut_.AllocTensor<T>();
        DataCopyPad(d, dxOutGm_[at], params, DataCopyPadExtParams<T>());
        inDxOut_.EnQue(d);
      }
    }
  }

  // dx_out of the tile: from its queue, or (dxOutLate: single-buffered, no dx_out queue) loaded now into
  // x's queue buffer, which x has left (Open / CloseInputs freed it).
  __aicore__ inline LocalTensor<T> TakeDxOut(int64_t row, uint32_t rows, uint32_t col, uint32_t len) {
    if (!t_.dxOutLate) return inDxOut_.DeQue<T>();
    LocalTensor<T> d = inX_.AllocTensor<T>();
    DataCopyPad(d, dxOutGm_[static_cast<uint64_t>(row) * t_.hidden + col],
                DataCopyExtParams(static_cast<uint16_t>(rows), len * sizeof(T), (t_.hidden - len) * sizeof(T), 0, 0),
                DataCopyPadExtParams<T>());
    inX_.EnQue(d);
    return inX_.DeQue<T>();
  }

  // 1. The landed dy and x as fp32 operands dy_, x_ (fp32: the input buffers themselves; else widened
  //    into dyf, xf and the inputs released), and the scratch work_ that will hold dx (fp32: the dx
  //    output buffer, allocated when `withDx`).
  __aicore__ inline void Open(int32_t n, bool withDx) {
    dyIn_ = inDy_.DeQue<T>();
    xIn_ = inX_.DeQue<T>();
    if (withDx) dxOut_ = outDx_.AllocTensor<T>();
    if constexpr (IsFloat()) {
      dy_ = dyIn_.template ReinterpretCast<float>();
      x_ = xIn_.template ReinterpretCast<float>();
      if (withDx) work_ = dxOut_.template ReinterpretCast<float>();
    } else {
      dy_ = dyfBuf_.Get<float>();
      x_ = xfBuf_.Get<float>();
      work_ = workBuf_.Get<float>();
      Cast(dy_, dyIn_, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
      Cast(x_, xIn_, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
      inDy_.FreeTensor(dyIn_);
      inX_.FreeTensor(xIn_);
      PipeBarrier<PIPE_V>();
    }
  }

  // The gate, after Open: dy' = dy * silu(z) over dy_, silu(z) = z * s, s = sigmoid(z) = 1 / (1 + exp(-z)).
  // `withDz` (single pass; split-row pass 2): first dz = dy * h * silu'(z) out, into work_ (free until
  // DgammaTerms) and the gate's buffer, h = round_G(gamma * round_T(x * rstd)) rounded through dz's T buffer.
  __aicore__ inline void Gate(int64_t row, uint32_t rows, uint32_t pitch, uint32_t col, uint32_t len, const float* rstd,
                              int32_t n, bool withDz) {
    LocalTensor<T> zIn = inZ_.DeQue<T>();
    LocalTensor<float> z;
    if constexpr (IsFloat()) {
      z = zIn.template ReinterpretCast<float>();
    } else {
      z = zfBuf_.Get<float>();
      Cast(z, zIn, RoundMode::CAST_NONE, static_cast<uint32_t>(n));
      PipeBarrier<PIPE_V>();
    }
    LocalTensor<float> s = gateBuf_.Get<float>();
    Muls(s, z, -1.0f, n);
    PipeBarrier<PIPE_V>();
    Exp(s, s, n);  // e = exp(-z)
    PipeBarrier<PIPE_V>();
    if (withDz) {
      // silu'(z) = s * (1 + z * (1 - s)) = (1 + e * (1 + z)) * s * s. Where it crosses 0 (z near -1.28), 1 + z is
      // exact and e * (1 + z) ~ -1 one rounding: in an fp32 emulation 1/4 of torch's order's small-value errors.
      // e * (1 + z) held above -FLT_MAX: a large negative z (e = inf) then gives -0, not -inf * 0
      Adds(work_, z, 1.0f, n);
      PipeBarrier<PIPE_V>();
      Mul(work_, work_, s, n);
      PipeBarrier<PIPE_V>();
      Maxs(work_, work_, -3.0e38f, n);
      PipeBarrier<PIPE_V>();
      Adds(work_, work_, 1.0f, n);
    }
    Adds(s, s, 1.0f, n);
    PipeBarrier<PIPE_V>();
    Reciprocal(s, s, n);  // sigmoid(z)
    PipeBarrier<PIPE_V>();
    if (withDz) {
      Mul(work_, work_, s, n);
      PipeBarrier<PIPE_V>();
      Mul(work_, work_, s, n);
    }
    Mul(z, z, s, n);  // silu(z) = z * s, over z
    if (withDz) {
      PipeBarrier<PIPE_V>();
      LocalTensor<T> dz = outDz_.AllocTensor<T>();
      for (uint32_t r = 0; r < rows; ++r) Muls(s[r * pitch], x_[r * pitch], rstd[r], static_cast<int32_t>(len));
      PipeBarrier<PIPE_V>();
      RoundToT(dz, s, n);
      LocalTensor<float> gammaF = gammaBuf_.Get<float>();
      for (uint32_t r = 0; r < rows; ++r) Mul(s[r * pitch], s[r * pitch], gammaF, static_cast<int32_t>(len));
      PipeBarrier<PIPE_V>();
      if constexpr (sizeof(G) < sizeof(float)) RoundToT(dz, s, n);  // G narrow: G is T (op_proto)
      Mul(s, s, dy_, n);
      PipeBarrier<PIPE_V>();
      if constexpr (IsFloat()) {
        Mul(dz.template ReinterpretCast<float>(), work_, s, n);
      } else {
        Mul(work_, work_, s, n);
        PipeBarrier<PIPE_V>();
        Cast(dz, work_, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
      }
      outDz_.EnQue(dz);
      dz = outDz_.DeQue<T>();
      DataCopyPad(dzGm_[static_cast<uint64_t>(row) * t_.hidden + col], dz,
                  DataCopyExtParams(static_cast<uint16_t>(rows), len * sizeof(T), 0, (t_.hidden - len) * sizeof(T), 0));
      outDz_.FreeTensor(dz);
    }
    PipeBarrier<PIPE_V>();
    Mul(dy_, dy_, z, n);
    PipeBarrier<PIPE_V>();
    inZ_.FreeTensor(zIn);  // z's last read (silu) was issued
  }

  // fp32: dy and x were computed on in their input buffers; they go back once their last read is issued.
  __aicore__ inline void CloseInputs() {
    if constexpr (IsFloat()) {
      inDy_.FreeTensor(dyIn_);
      inX_.FreeTensor(xIn_);
    }
  }

  // 2. dgamma partial += (dy * rstd) * x, row by row in row order; then dg = dy * gamma over dy.
  __aicore__ inline void DgammaTerms(uint32_t rows, uint32_t pitch, uint32_t len, const float* rstd) {
    LocalTensor<float> acc = accBuf_.Get<float>();
    LocalTensor<float> gammaF = gammaBuf_.Get<float>();
    const int32_t n = static_cast<int32_t>(len);
    for (uint32_t r = 0; r < rows; ++r) Muls(work_[r * pitch], dy_[r * pitch], rstd[r], n);
    PipeBarrier<PIPE_V>();
    for (uint32_t r = 0; r < rows; ++r) Mul(dy_[r * pitch], dy_[r * pitch], gammaF, n);
    for (uint32_t r = 0; r < rows; ++r) {
      MulAddDst(acc, work_[r * pitch], x_[r * pitch], n);
      PipeBarrier<PIPE_V>();  // the rows accumulate into one acc
    }
  }

  // 3. S = sum(dg * x) of each row into sums[8 r] (work_ is scratch), then read by the scalar unit.
  __aicore__ inline void SumTerms(uint32_t rows, uint32_t pitch, uint32_t len) {
    for (uint32_t r = 0; r < rows; ++r) Mul(work_[r * pitch], dy_[r * pitch], x_[r * pitch], static_cast<int32_t>(len));
    PipeBarrier<PIPE_V>();
    FoldSumRows(sumBuf_.Get<float>(), work_, tmpBuf_.Get<float>(), len, rows, pitch);
    SyncPipes<HardEvent::V_S>();
  }

  // 4. dx = rstd * dg - x * c with c = rstd^3 * S / N, into work_ (the formula's own order: two products
  //    and one sum, so a cancelling dx keeps its accuracy); dg's buffer ends up holding rstd * dg.
  __aicore__ inline void DxTerms(uint32_t rows, uint32_t pitch, uint32_t len, const float* rstd, const float* coef) {
    const int32_t n = static_cast<int32_t>(len);
    for (uint32_t r = 0; r < rows; ++r) {
      Muls(dy_[r * pitch], dy_[r * pitch], rstd[r], n);
      Muls(work_[r * pitch], x_[r * pitch], -coef[r], n);
    }
    PipeBarrier<PIPE_V>();
    for (uint32_t r = 0; r < rows; ++r) Add(work_[r * pitch], dy_[r * pitch], work_[r * pitch], n);
    CloseInputs();
  }

  // 5. for add_rms_norm_grad dx += dx_out in fp32; dx to T (one rounding) and out.
  __aicore__ inline void FinishDx(int64_t row, uint32_t rows, uint32_t col, uint32_t len, int32_t n) {
    if constexpr (ADD) {
      LocalTensor<T> d = TakeDxOut(row, rows, col, len);
      PipeBarrier<PIPE_V>();
      if constexpr (IsFloat()) {
        Add(work_, work_, d.template ReinterpretCast<float>(), n);
      } else {
        Cast(dy_, d, RoundMode::CAST_NONE, static_cast<uint32_t>(n));  // rstd * dg is no longer needed
        PipeBarrier<PIPE_V>();
        Add(work_, work_, dy_, n);
      }
      (t_.dxOutLate ? inX_ : inDxOut_).FreeTensor(d);
    }
    if constexpr (!IsFloat()) {
      PipeBarrier<PIPE_V>();
      Cast(dxOut_, work_, RoundMode::CAST_RINT, static_cast<uint32_t>(n));
    }
    outDx_.EnQue(dxOut_);
    LocalTensor<T> dx = outDx_.DeQue<T>();
    DataCopyPad(dxGm_[static_cast<uint64_t>(row) * t_.hidden + col], dx,
                DataCopyExtParams(static_cast<uint16_t>(rows), len * sizeof(T), 0, (t_.hidden - len) * sizeof(T), 0));
    outDx_.FreeTensor(dx);
  }

  __aicore__ inline void ProcessTile(int64_t row, uint32_t rows) {
    const uint32_t n = t_.hidden, pitch = t_.rowPitch;
    const int32_t tileElems = static_cast<int32_t>(rows * pitch);  // the tile is in the queues (Process)
    float rstd[NORM_MAX_TILE_ROWS];
    float coef[NORM_MAX_TILE_ROWS];  // c = rstd^3 * S / N
    for (uint32_t r = 0; r < rows; ++r) rstd[r] = rstdGm_.GetValue(row + r);
    Open(tileElems, true);
    if constexpr (GATE) Gate(row, rows, pitch, 0, n, rstd, tileElems, true);
    DgammaTerms(rows, pitch, n, rstd);
    SumTerms(rows, pitch, n);
    LocalTensor<float> sums = sumBuf_.Get<float>();
    for (uint32_t r = 0; r < rows; ++r) coef[r] = rstd[r] * rstd[r] * rstd[r] * (sums.GetValue(r * 8) * t_.invHidden);
    DxTerms(rows, pitch, n, rstd, coef);
    FinishDx(row, rows, 0, n, tileElems);
  }

  // Split-row: `rows` rows from `row`; the first group of a block starts its partials at zero.
  __aicore__ inline void ProcessGroup(int64_t row, uint32_t rows, bool first) {
    float rstd[NORM_SPLIT_GROUP_ROWS];
    float total[NORM_SPLIT_GROUP_ROWS];  // S = sum(dg * x) = total + low, compensated over the chunks
    float low[NORM_SPLIT_GROUP_ROWS];
    float coef[NORM_SPLIT_GROUP_ROWS];   // c = rstd^3 * S / N
    LocalTensor<float> sums = sumBuf_.Get<float>();
    for (uint32_t r = 0; r < rows; ++r) {
      rstd[r] = rstdGm_.GetValue(row + r);
      total[r] = 0.0f;
      low[r] = 0.0f;
    }
    // Pass 1. chunk by chunk (one gamma load per chunk), each row's S: dg and dg * x over dy, then summed
    // (fp32: compensated, x's buffer the scratch, x being dead once dg * x is formed), the chunks' sums
    // combined compensated
    for (uint32_t c = 0; c < t_.chunkCount; ++c) {
      const uint32_t col = c * t_.chunk;
      const uint32_t len = ChunkLen(col);
      const int32_t landed = static_cast<int32_t>(PaddedLen<T>(len));
      LoadGamma(col, len);
      CopyIn(row, 1, col, len, false);
      for (uint32_t r = 0; r < rows; ++r) {
        if (r + 1 < rows) CopyIn(row + r + 1, 1, col, len, false);  // the next row loads while this one reduces
        Open(landed, false);
        if constexpr (GATE) Gate(row + r, 1, 0, col, len, &rstd[r], landed, false);
        Mul(dy_, dy_, gammaBuf_.Get<float>(), static_cast<int32_t>(len));
        PipeBarrier<PIPE_V>();
        Mul(dy_, dy_, x_, static_cast<int32_t>(len));
        PipeBarrier<PIPE_V>();
        if constexpr (IsFloat()) {  // fp16/bf16 dx cannot see an fp32 ulp of S: the plain fold
          CompensatedSum(dy_, x_, tmpBuf_.Get<float>(), len);
          SyncPipes<HardEvent::V_S>();
          AccumulateChunk(total[r], low[r], dy_, x_, len);
        } else {
          FoldSum(sums, dy_, tmpBuf_.Get<float>(), len);
          SyncPipes<HardEvent::V_S>();
          AccumulateCompensated(total[r], low[r], sums.GetValue(0), 0.0f);
        }
        CloseInputs();  // after the scalar read of x's buffer
      }
    }
    for (uint32_t r = 0; r < rows; ++r) {
      const float sum = CompensatedTotal(total[r], low[r]);
      coef[r] = rstd[r] * rstd[r] * rstd[r] * (sum * t_.invHidden);
    }
    // Pass 2. chunk by chunk: dx of every row of the group, and that chunk's dgamma partial
    LocalTensor<float> acc = accBuf_.Get<float>();
    for (uint32_t c = 0; c < t_.chunkCount; ++c) {
      const uint32_t col = c * t_.chunk;
      const uint32_t len = ChunkLen(col);
      const int32_t landed = static_cast<int32_t>(PaddedLen<T>(len));
      SyncPipes<HardEvent::MTE3_V>();  // the previous chunk's partial has left acc
      if (first) {
        Duplicate(acc, 0.0f, static_cast<int32_t>(len));
      } else {
        SyncPipes<HardEvent::MTE3_MTE2>();  // read back what this block wrote to GM
        DataCopyPad(acc, partGm_[col], DataCopyExtParams(1, len * sizeof(float), 0, 0, 0),
                    DataCopyPadExtParams<float>());
        SyncPipes<HardEvent::MTE2_V>();
      }
      LoadGamma(col, len);
      CopyIn(row, 1, col, len, true);
      for (uint32_t r = 0; r < rows; ++r) {
        if (r + 1 < rows) CopyIn(row + r + 1, 1, col, len, true);
        Open(landed, true);
        if constexpr (GATE) Gate(row + r, 1, 0, col, len, &rstd[r], landed, true);
        DgammaTerms(1, 0, len, &rstd[r]);
        DxTerms(1, 0, len, &rstd[r], &coef[r]);
        FinishDx(row + r, 1, col, len, landed);
      }
      StorePartial(col, len);
    }
  }

  __aicore__ inline void StorePartial(uint32_t col, uint32_t len) {
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(partGm_[col], accBuf_.Get<float>(), DataCopyExtParams(1, len * sizeof(float), 0, 0, 0));
  }

  NormTilingData t_;
  int64_t rowBegin_ = 0, rowCount_ = 0;
  GlobalTensor<T> dyGm_, xGm_, dxGm_, dxOutGm_, zGm_, dzGm_;
  GlobalTensor<float> rstdGm_, partGm_;
  GlobalTensor<G> gammaGm_;
  TQue<QuePosition::VECIN, NORM_GRAD_BUFFER_NUM> inDy_, inX_, inDxOut_, inZ_;
  TQue<QuePosition::VECOUT, NORM_GRAD_BUFFER_NUM> outDx_, outDz_;
  TBuf<TPosition::VECCALC> dyfBuf_, xfBuf_, workBuf_, sumBuf_, tmpBuf_, gammaRawBuf_, gammaBuf_, accBuf_;
  TBuf<TPosition::VECCALC> gateBuf_, zfBuf_;  // gated only: sigmoid(z) then h; z widened (fp16/bf16)
  LocalTensor<T> dyIn_, xIn_, dxOut_;  // the tile being computed: its landed inputs and its dx buffer
  LocalTensor<float> dy_, x_, work_;   // ... and its fp32 operands (see Open)
};

// dgamma = sum over the blockDim partial rows, in block order (deterministic), rounded once to G.
template <typename G>
class KernelDgammaReduce {
 public:
  __aicore__ inline KernelDgammaReduce() {}

  __aicore__ inline void Init(GM_ADDR partials, GM_ADDR dgamma, const NormTilingData& tiling, TPipe* pipe) {
    t_ = tiling;
    partGm_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(partials), static_cast<uint64_t>(t_.blockDim) * t_.hidden);
    outGm_.SetGlobalBuffer(reinterpret_cast<__gm__ G*>(dgamma), t_.hidden);
    pipe->InitBuffer(inPart_, NORM_REDUCE_BUFFER_NUM, t_.reduceChunk * sizeof(float));  // loads in flight
    pipe->InitBuffer(accBuf_, t_.reduceChunk * sizeof(float));
    pipe->InitBuffer(outG_, static_cast<uint8_t>(t_.bufferNum), t_.reduceChunk * sizeof(G));
  }

  __aicore__ inline void Process() {
    int64_t begin = 0, count = 0;
    BlockTaskRange(t_.reduceTasksPerBlock, t_.reduceTasksRemainder, begin, count);
    LocalTensor<float> acc = accBuf_.Get<float>();
    for (int64_t task = begin; task < begin + count; ++task) {
      const uint32_t col = static_cast<uint32_t>(task) * t_.reduceChunk;
      const uint32_t left = t_.hidden - col;
      const uint32_t len = left < t_.reduceChunk ? left : t_.reduceChunk;
      const uint32_t landed = (len + 7) / 8 * 8;
      for (uint32_t p = 0; p < t_.blockDim; ++p) {
        LocalTensor<float> part = inPart_.AllocTensor<float>();
        DataCopyPad(part, partGm_[static_cast<uint64_t>(p) * t_.hidden + col],
                    DataCopyExtParams(1, len * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>());
        inPart_.EnQue(part);
        part = inPart_.DeQue<float>();
        // 1. acc = partial 0 + partial 1 + ... in block order
        if (p == 0) {
          DataCopy(acc, part, landed);
        } else {
          Add(acc, acc, part, static_cast<int32_t>(len));
        }
        PipeBarrier<PIPE_V>();
        inPart_.FreeTensor(part);
      }
      // 2. one rounding to gamma's dtype
      LocalTensor<G> out = outG_.AllocTensor<G>();
      if constexpr (sizeof(G) == sizeof(float)) {
        DataCopy(out.template ReinterpretCast<float>(), acc, landed);
      } else {
        Cast(out, acc, RoundMode::CAST_RINT, len);
      }
      outG_.EnQue(out);
      out = outG_.DeQue<G>();
      DataCopyPad(outGm_[col], out, DataCopyExtParams(1, len * sizeof(G), 0, 0, 0));
      outG_.FreeTensor(out);
    }
  }

 private:
  NormTilingData t_;
  GlobalTensor<float> partGm_;
  GlobalTensor<G> outGm_;
  TQue<QuePosition::VECIN, NORM_GRAD_BUFFER_NUM> inPart_;
  TQue<QuePosition::VECOUT, NORM_GRAD_BUFFER_NUM> outG_;
  TBuf<TPosition::VECCALC> accBuf_;
};

// The two phases on one block, from the tiling struct: the rows (dx, the block's dgamma partial row) and
// the dgamma reduction. The direct launches run each as its own kernel; the op package's one launch runs
// both, meeting at SyncAll (op_package/rms_norm/rms_norm_grad_one_launch.h).
template <typename T, typename G, bool ADD, bool GATE = false>
__aicore__ inline void RmsNormGradRows(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dxOut, GM_ADDR dx,
                                       GM_ADDR partials, const NormTilingData& tiling, GM_ADDR z = nullptr,
                                       GM_ADDR dz = nullptr) {
  TPipe pipe;
  KernelRmsNormGrad<T, G, ADD, GATE> op;
  op.Init(dy, x, rstd, gamma, dxOut, dx, partials, tiling, &pipe, z, dz);
  op.Process();
}

template <typename G>
__aicore__ inline void RmsNormDgammaReduce(GM_ADDR partials, GM_ADDR dgamma, const NormTilingData& tiling) {
  TPipe pipe;
  KernelDgammaReduce<G> op;
  op.Init(partials, dgamma, tiling, &pipe);
  op.Process();
}

template <typename T, typename G, bool ADD, bool GATE = false>
__aicore__ inline void RunRmsNormGrad(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dxOut, GM_ADDR dx,
                                      GM_ADDR partials, GM_ADDR tiling, GM_ADDR z = nullptr, GM_ADDR dz = nullptr) {
  NormTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  RmsNormGradRows<T, G, ADD, GATE>(dy, x, rstd, gamma, dxOut, dx, partials, tilingData, z, dz);
}

template <typename G>
__aicore__ inline void RunDgammaReduce(GM_ADDR partials, GM_ADDR dgamma, GM_ADDR tiling) {
  NormTilingData tilingData;
  CopyTiling(&tilingData, tiling);
  RmsNormDgammaReduce<G>(partials, dgamma, tilingData);
}

// Row kernels: one per (x, gamma) dtype pair (RMS_NORM_DTYPES, tiling/rms_norm_tiling_data.h); the
// workspace holds the [blockDim, N] fp32 partials.
#define RMS_NORM_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(RMS_NORM_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                    \
    RunRmsNormGrad<T, G, false>(dy, x, rstd, gamma, dy, dx, workspace, tiling);        \
  }
#define ADD_RMS_NORM_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(ADD_RMS_NORM_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                        \
    RunRmsNormGrad<T, G, true>(dy, x, rstd, gamma, dxOut, dx, workspace, tiling);          \
  }
#define GATED_RMS_NORM_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(GATED_RMS_NORM_GRAD_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                          \
    RunRmsNormGrad<T, G, false, true>(dy, x, rstd, gamma, dy, dx, workspace, tiling, z, dz); \
  }
// The dgamma reduction: partials [blockDim, N] fp32 -> dgamma [N] in gamma's dtype (RMS_NORM_DGAMMA_DTYPES).
#define RMS_NORM_DGAMMA_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                        \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(RMS_NORM_DGAMMA_PARAMS(GM_ADDR)) { \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                      \
    RunDgammaReduce<G>(partials, dgamma, tiling);                                        \
  }
RMS_NORM_GRAD_DTYPES(RMS_NORM_GRAD_ENTRY, rms_norm_grad)
ADD_RMS_NORM_GRAD_DTYPES(ADD_RMS_NORM_GRAD_ENTRY, add_rms_norm_grad)
GATED_RMS_NORM_GRAD_DTYPES(GATED_RMS_NORM_GRAD_ENTRY, gated_rms_norm_grad)
RMS_NORM_DGAMMA_DTYPES(RMS_NORM_DGAMMA_ENTRY, rms_norm_dgamma)
#undef RMS_NORM_GRAD_ENTRY
#undef ADD_RMS_NORM_GRAD_ENTRY
#undef GATED_RMS_NORM_GRAD_ENTRY
#undef RMS_NORM_DGAMMA_ENTRY
