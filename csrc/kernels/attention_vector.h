// The AIVs' half of the fused attention forward: AIV 0 of a group takes the first ceil(rows / 2) rows of
// the task's S1 block, AIV 1 the rest. Per S2 block (FlashAttention-2's online softmax, fp32 throughout):
//   S (fp32 from the AIC's workspace slot) * scale, softcapped if asked (row_ops.h SoftcapBlock); the mask as a bound
//   Min'd into S: kMasked where masked (atten_mask's True, or outside the band: sparse modes 2-4), so exp(kMasked -
//   max) is 0 in any row that keeps a key; m' = max(m, rowmax S); alpha = exp(m - m'); P = exp(S - m'); l = l alpha +
//   rowsum P; with dropout P times keep / keep_prob from drop_mask (attention_dropout.h) after the statistics took
//   it; P in the input dtype to the workspace, flag kPReady; once the AIC flags kOReady, O = O alpha + P V, flag
//   kOFree.
// At the end O / l once, written in the input dtype, and m, l as softmax_max / softmax_sum (8 lanes each).
// The statistics live in UB, one lane per row, and every row-wise step is one call over all rows
// (row_ops.h): the scalar unit only issues instructions.
// A row that keeps no key at all (its max stays kMasked) gets out = 0, softmax_max = -FLT_MAX and
// softmax_sum = FLT_MAX, as CANN writes such rows.
#pragma once
#include "attention_dropout.h"
#include "attention_mask.h"
#include "attention_task.h"
#include "kernel_utils.h"

namespace attention_vec {
using attention_mask::kMasked;
using row_ops::kMaxRows;  // rows of one AIV: s1Block <= 128
constexpr float kFltMax = 3.40282347e38f;
// statBuf_'s slots (Stat, TaskStat, kStats) are the buffer plan's, tiling/attention_buffers.h.
}  // namespace attention_vec

template <typename T>
class AttentionVector {
  static constexpr uint32_t kTPerBlock = 32 / sizeof(T);

 public:
  __aicore__ inline void Init(GM_ADDR mask, GM_ADDR sink, GM_ADDR dropMask, GM_ADDR out, GM_ADDR softmaxMax,
                              GM_ADDR softmaxSum, GM_ADDR ws, const AttentionTilingData& t, GM_ADDR table) {
    t_ = &t;
    sub_ = uint32_t(GetSubBlockIdx());
    GM_ADDR group = ws + (GetBlockIdx() / GetTaskRation()) * t.workspacePerGroup;
    sWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group));
    pWs_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(group + t.pOffset));
    oWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + t.oOffset));
    if (t.maskFull) mask_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(mask));
    if (t.sink) sink_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(sink), t.heads);
    out_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out));
    max_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(softmaxMax));
    sum_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(softmaxSum));
    using namespace attention_vec;
    const uint32_t rows = AttentionVectorRows(uint32_t(t.s1Block)), s2b = t.s2Block, vp = t.vPitch;
    maxRows_ = rows;
    // the buffer plan the tiling counted (tiling/attention_buffers.h), in its order
    const AttentionVectorUb ub = AttentionVectorBuffers(rows, s2b, vp, t.maskFull, t.dropout);
    pipe_.InitBuffer(sQue_, 2, ub.s);
    pipe_.InitBuffer(boundBuf_, ub.bound);
    if (t.maskFull) {
      pipe_.InitBuffer(maskBuf_, ub.mask);
      pipe_.InitBuffer(maskHalfBuf_, ub.maskHalf);
    }
    pipe_.InitBuffer(oBuf_, ub.o);
    if (t.pvBuffer) pipe_.InitBuffer(pvQue_, 1, ub.pv);
    pipe_.InitBuffer(rampBuf_, ub.ramp);
    pipe_.InitBuffer(rowRampBuf_, ub.rowRamp);
    pipe_.InitBuffer(statBuf_, ub.stats);
    pipe_.InitBuffer(blocksBuf_, ub.blocks);
    pipe_.InitBuffer(outStatBuf_, ub.outStats);
    if (t.dropout) dropout_.Init(pipe_, ub.drop, t, dropMask, table);
    LocalTensor<float> ramp = rampBuf_.Get<float>(), rowRamp = rowRampBuf_.Get<float>();
    for (uint32_t c = 0; c < s2b; ++c) ramp.SetValue(c, float(c));
    // each row's query row relative to the task's first (stacked heads: G rows per query row)
    const uint32_t g = uint32_t(t.stackHeads), first = g > 1 && sub_ == 1 ? (g * uint32_t(t.s1) + 1) / 2 : 0;
    for (uint32_t r = 0; r < kMaxRows; ++r) rowRamp.SetValue(r, float(g > 1 ? (first + r) / g : r));
    // lanes past the rows stay defined: Brcb and BlockReduce read whole groups of 8 rows
    Duplicate(statBuf_.Get<float>(), 0.0f, int32_t(kStats * kMaxRows));
    Duplicate(blocksBuf_.Get<float>(), 0.0f, int32_t(2 * kMaxRows * row_ops::kBlock));
    if (t.pvBuffer) {  // the lanes between Dv and vPitch: never loaded, so O's stay 0
      LocalTensor<float> pv = pvQue_.AllocTensor<float>();
      Duplicate(pv, 0.0f, int32_t(rows * vp));
      pvQue_.FreeTensor(pv);
    }
  }

  // The group's blocks are one stream across its tasks, as on the AIC (attention_cube.h): block n's softmax
  // comes before the P V of block n - kAttentionPLead is folded in, whichever tasks they belong to, so the
  // cube is never left without a P at a task's end; a task's output goes out right after its last block's
  // P V. The next block's S (this task's or the next task's first) is loaded as soon as a softmax is
  // issued, so it arrives while the vector unit works.
  template <class Walk>
  __aicore__ inline void Process(Walk& walk) {
    using namespace attention_flags;
    AttentionTask next;
    bool more = walk.Next(next), loaded = false;
    while (more) {
      Flight& f = flights_[begun_ % kAttentionPSlots];
      f.task = next;
      more = walk.Next(next);
      if (f.task.count == 0) {  // every row fully masked: written in its turn, with nothing in flight
        Drain();
        Begin(f);
        FinishOldest();
        continue;
      }
      Begin(f);
      for (int64_t idx = 0; idx < f.task.count; ++idx) {
        if (!loaded) LoadS(f, idx);
        Use(f);
        if (rows_ > 0) Softmax(f.task, idx);
        f.cur = cur_;
        CrossCoreSetFlag<2, PIPE_MTE3>(kPReady);
        ++softmaxed_;
        loaded = idx + 1 < f.task.count || (more && next.count > 0);
        if (idx + 1 < f.task.count) {
          LoadS(f, idx + 1);
        } else if (loaded) {
          Flight g;
          g.task = next;
          Place(g);
          LoadS(g, 0);
        }
        if (softmaxed_ - accumulated_ > kAttentionPLead) AccumulateOldest();
      }
    }
    Drain();
  }

 private:
  // A task with blocks in flight: its rows of this AIV, its first block's place in the group's stream, its
  // statistics' set in statBuf_ and which of its two max slots is current.
  struct Flight {
    AttentionTask task;
    int64_t n0;
    uint32_t r0, rows, set, cur;
  };

  // f's rows of this AIV (AIV 0 the first half) and its blocks' place in the stream.
  __aicore__ inline void Place(Flight& f) const {
    const int64_t half = (f.task.rows + 1) / 2;
    f.r0 = sub_ == 0 ? 0 : uint32_t(half);
    f.rows = uint32_t(sub_ == 0 ? half : f.task.rows - half);
    f.n0 = softmaxed_;
  }

  // A new task: its running max kMasked and its sum 0, in the set of the task begun kAttentionPSlots ago,
  // which is finished (at most kAttentionPLead blocks are in flight, each task holding one at least).
  __aicore__ inline void Begin(Flight& f) {
    using namespace attention_vec;
    Place(f);
    f.set = uint32_t(begun_ % kAttentionPSlots), f.cur = 0;
    ++begun_;
    LocalTensor<float> stat = statBuf_.Get<float>();
    Duplicate(stat[TaskRow(f.set, kMax0) * kMaxRows], kMasked, int32_t(kMaxRows));
    Duplicate(stat[TaskRow(f.set, kSum) * kMaxRows], 0.0f, int32_t(kMaxRows));
    if (t_->sink && f.rows > 0) StartAtSink(f, stat);
    if (f.task.count == 0 && f.rows > 0) {  // its output is O = 0: the previous task's went out
      SyncPipes<HardEvent::MTE3_V>();
      Duplicate(oBuf_.Get<float>(), 0.0f, int32_t(f.rows * t_->vPitch));
    }
  }

  // A head's sink logit is a key every row keeps, with no value: the running max starts at it and the sum at
  // exp(sink - sink) = 1, so the online softmax folds it in like any block (a row that keeps no key then gives 0).
  // One head's rows take its logit by two Duplicates (one scalar read from GM a task, not two writes a row);
  // decode's stacked heads cycle through the group's heads row by row, so they are written one by one.
  __aicore__ inline void StartAtSink(const Flight& f, const LocalTensor<float>& stat) {
    using namespace attention_vec;
    LocalTensor<float> m = stat[TaskRow(f.set, kMax0) * kMaxRows], l = stat[TaskRow(f.set, kSum) * kMaxRows];
    const uint32_t g = uint32_t(t_->stackHeads);
    if (g <= 1) {
      Duplicate(m, sink_.GetValue(uint64_t(f.task.n)), int32_t(f.rows));
      Duplicate(l, 1.0f, int32_t(f.rows));
      return;
    }
    SyncPipes<HardEvent::V_S>();
    for (uint32_t r = 0; r < f.rows; ++r) {
      m.SetValue(r, sink_.GetValue(uint64_t(f.task.n + (f.r0 + r) % g)));
      l.SetValue(r, 1.0f);
    }
    SyncPipes<HardEvent::S_V>();
  }

  // The members the block steps read: f's rows, set, current max slot and stream place.
  __aicore__ inline void Use(const Flight& f) {
    r0_ = f.r0, rows_ = f.rows, set_ = f.set, cur_ = f.cur, blocks_ = f.n0;
  }

  __aicore__ inline static uint32_t TaskRow(uint32_t set, uint32_t which) {
    return attention_vec::kTaskStats + set * attention_vec::kPerTask + which;
  }

  // Once the AIC flags it, the oldest block without it gets its P V folded in; its task's output goes out
  // after its last.
  __aicore__ inline void AccumulateOldest() {
    using namespace attention_flags;
    Flight& f = flights_[finished_ % kAttentionPSlots];
    const int64_t idx = accumulated_ - f.n0;
    CrossCoreWaitFlag<2, PIPE_MTE2>(kOReady);
    Use(f);
    if (rows_ > 0) Accumulate(idx);
    CrossCoreSetFlag<2, PIPE_MTE2>(kOFree);
    ++accumulated_;
    if (idx + 1 == f.task.count) FinishOldest();
  }

  __aicore__ inline void FinishOldest() {
    const Flight& f = flights_[finished_ % kAttentionPSlots];
    Use(f);
    if (rows_ > 0) Finish(f.task);
    ++finished_;
  }

  __aicore__ inline void Drain() {
    while (accumulated_ < softmaxed_) AccumulateOldest();
  }

  // Once the AIC flags it, S block idx (fp32, this AIV's rows, padded to pp columns with kMasked) from its
  // workspace slot into the next of sQue_'s two buffers.
  __aicore__ inline void LoadS(const Flight& f, int64_t idx) {
    using namespace attention_flags;
    CrossCoreWaitFlag<2, PIPE_MTE2>(kSReady);
    if (f.rows == 0) return;
    const AttentionTilingData& t = *t_;
    const AttentionTask& task = f.task;
    const int64_t j0 = (task.first + idx) * t.s2Block;
    const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block), pp = (cols + 7) / 8 * 8;
    LocalTensor<float> s = sQue_.AllocTensor<float>();
    const int64_t slot = ((f.n0 + idx) % kAttentionSSlots) * (t.sSlotBytes / int64_t(sizeof(float)));
    DataCopyPad(s, sWs_[slot + int64_t(f.r0) * t.s2Block],
                DataCopyExtParams(uint16_t(f.rows), cols * 4, (uint32_t(t.s2Block) - cols) * 4, 0, 0),
                DataCopyPadExtParams<float>(pp != cols, 0, uint8_t(pp - cols), attention_vec::kMasked));
    sQue_.EnQue(s);
  }

  // S block idx (LoadS) -> P (workspace) and the running statistics; leaves alpha in statBuf_.
  __aicore__ inline void Softmax(const AttentionTask& task, int64_t idx) {
    using namespace attention_vec;
    const AttentionTilingData& t = *t_;
    const int64_t j0 = (task.first + idx) * t.s2Block;
    const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block);
    const uint32_t pp = (cols + 7) / 8 * 8, n = rows_ * pp;
    LocalTensor<float> bound = boundBuf_.Get<float>();
    uint32_t mp = 0;
    if (t.maskFull) {  // stacked heads: a copy per row (the mask may broadcast over heads)
      SyncPipes<HardEvent::V_MTE2>();  // V is done with the previous block's mask
      LocalTensor<uint8_t> bytes = maskBuf_.Get<uint8_t>();
      for (uint32_t r = 0; r < rows_; r += t.stackHeads > 1 ? 1 : rows_) {
        const AttentionRowRun run = AttentionRun(t, task, r0_ + r, r0_ + rows_);
        mp = AttentionLoadMask(bytes[r * ((cols + 31) / 32 * 32)], mask_, t, task.b, run.head, run.row, j0,
                               t.stackHeads > 1 ? 1 : rows_, cols);
      }
      SyncPipes<HardEvent::MTE2_V>();
    }
    if (t.dropout) LoadDropout(task, j0, cols);  // its copies run under the softmax
    LocalTensor<float> s = sQue_.DeQue<float>();
    SyncPipes<HardEvent::MTE3_V>();  // the previous block's P copy has read the bound buffer
    Muls(s, s, t.scale, int32_t(n));
    if (t.softcap > 0.0f) {  // before the mask, as Gemma 2/3 cap their scores
      SoftcapBlock(s, bound, n, t.softcap, false);
      AttentionMaskPad(s, bound, rampBuf_.Get<float>(), rows_, cols, pp);
    }
    if (t.maskFull) AttentionApplyMask(s, bound, maskBuf_.Get<uint8_t>(), maskHalfBuf_.Get<half>(), rows_, pp, mp);
    LocalTensor<float> stat = statBuf_.Get<float>(), blocks = blocksBuf_.Get<float>();
    if (t.band) {
      const int64_t i0 = t.stackHeads > 1 ? 0 : task.i0 + r0_;  // rowRamp holds the rest
      const int64_t iFirst = AttentionRun(t, task, r0_, r0_ + 1).row,
                    iLast = AttentionRun(t, task, r0_ + rows_ - 1, r0_ + rows_).row;
      AttentionApplyBand(s, bound, rampBuf_.Get<float>(), rowRampBuf_.Get<float>(), stat[kTmp0 * kMaxRows], blocks, t,
                         i0, iFirst, iLast, rows_, task.s1, task.s2, j0, cols, pp);
    }
    // m' = max(m, rowmax S); P = exp(S - m'); alpha = exp(m - m'); l = l alpha + rowsum P (bound: the folds)
    LocalTensor<float> mOld = stat[TaskRow(set_, kMax0 + cur_) * kMaxRows];
    LocalTensor<float> mNew = stat[TaskRow(set_, kMax1 - cur_) * kMaxRows];
    LocalTensor<float> red = stat[kRed * kMaxRows],
                       alpha = stat[(kAlpha0 + (blocks_ + idx) % kAttentionPSlots) * kMaxRows];
    LocalTensor<float> l = stat[TaskRow(set_, kSum) * kMaxRows];
    LocalTensor<float> red8 = blocks[kMaxRows * row_ops::kBlock];  // the band is done with it
    OnlineSoftmaxBlock(s, mOld, mNew, alpha, l, red, bound, red8, blocks, rows_, pp, pp);
    cur_ ^= 1u;
    if (t.dropout) Dropout(task, s, j0, pp);
    // P in the input dtype -> the workspace, this AIV's rows after the other's
    if constexpr (sizeof(T) == 4) {
      DataCopy(bound, s, DataCopyParams(1, uint16_t(n * 4 / 32), 0, 0));
    } else {
      Cast(bound.ReinterpretCast<T>(), s, RoundMode::CAST_RINT, n);
    }
    sQue_.FreeTensor(s);
    SyncPipes<HardEvent::V_MTE3>();
    const int64_t pSlot = ((blocks_ + idx) % kAttentionPSlots) * (t.pSlotBytes / int64_t(sizeof(T)));
    DataCopyPad(pWs_[pSlot + int64_t(r0_) * pp], bound.ReinterpretCast<T>(),
                DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
  }

  // The block's first mask bit: rows_ rows of head task.n from task.i0 + r0_, keys from j0.
  __aicore__ inline int64_t DropoutBit(const AttentionTask& task, int64_t j0) {
    return dropout_.Bit(task.b, task.n, task.i0 + r0_, j0, task.s1, task.s2);
  }

  // The block's drop_mask bytes (MTE2; Dropout syncs).
  __aicore__ inline void LoadDropout(const AttentionTask& task, int64_t j0, uint32_t cols) {
    dropout_.Load(DropoutBit(task, j0), task.s2, rows_, cols);
  }

  // P [rows_, pp] of keys j0.. times keep / keep_prob from the loaded bytes, once the statistics took it; bound is
  // free.
  __aicore__ inline void Dropout(const AttentionTask& task, const LocalTensor<float>& p, int64_t j0, uint32_t pp) {
    const LocalTensor<float> factors =
        dropout_.Factors(boundBuf_.Get<float>(), DropoutBit(task, j0), task.s2, rows_, pp, t_->keepProbInv);
    Mul(p, p, factors, int32_t(rows_ * pp));
  }

  // O = O alpha + P V of block idx (the AIC's block, fp32 rows of vPitch in the workspace).
  __aicore__ inline void Accumulate(int64_t idx) {
    const AttentionTilingData& t = *t_;
    const uint32_t vp = t.vPitch, dv = uint32_t(t.valueDim), dv8 = (dv + 7) / 8 * 8;
    LocalTensor<float> o = oBuf_.Get<float>();
    using namespace attention_vec;
    const int64_t slot = ((blocks_ + idx) % kAttentionOSlots) * (t.oSlotBytes / int64_t(sizeof(float)));
    const DataCopyPadExtParams<float> pad(dv8 != dv, 0, uint8_t(dv8 - dv), 0.0f);
    if (t.pvBuffer) {  // its own buffer: the load waits for nothing the vector unit does
      LocalTensor<float> pv = pvQue_.AllocTensor<float>();
      DataCopyPad(pv, oWs_[slot + int64_t(r0_) * vp],
                  DataCopyExtParams(uint16_t(rows_), dv * 4, (vp - dv) * 4, (vp - dv8) / 8, 0), pad);
      pvQue_.EnQue(pv);
    }
    if (idx == 0) {  // the task's first: O starts at 0 once the previous task's is out
      SyncPipes<HardEvent::MTE3_V>();
      Duplicate(o, 0.0f, int32_t(rows_ * vp));
    }
    RowScale(row_ops::Op::kMul, o, statBuf_.Get<float>()[(kAlpha0 + (blocks_ + idx) % kAttentionPSlots) * kMaxRows],
             blocksBuf_.Get<float>(), rows_, vp, vp);
    if (t.pvBuffer) {
      LocalTensor<float> pv = pvQue_.DeQue<float>();
      Add(o, o, pv, int32_t(rows_ * vp));
      pvQue_.FreeTensor(pv);
      return;
    }
    // else in chunks through the bound buffer, once the block's P copy has read it
    LocalTensor<float> pv = boundBuf_.Get<float>();
    const uint32_t chunk = (maxRows_ * uint32_t(t.s2Block)) / vp;  // rows of P V per pass through the buffer
    for (uint32_t c = 0; c < rows_; c += chunk) {
      const uint32_t rc = rows_ - c < chunk ? rows_ - c : chunk;
      SyncPipes<HardEvent::V_MTE2>();
      SyncPipes<HardEvent::MTE3_MTE2>();
      DataCopyPad(pv, oWs_[slot + int64_t(r0_ + c) * vp],
                  DataCopyExtParams(uint16_t(rc), dv * 4, (vp - dv) * 4, (vp - dv8) / 8, 0), pad);
      SyncPipes<HardEvent::MTE2_V>();
      Add(o[c * vp], o[c * vp], pv, int32_t(rc * vp));
    }
  }

  // out = O / l, softmax_max = m, softmax_sum = l; a row that kept no key: 0, -FLT_MAX, FLT_MAX.
  __aicore__ inline void Finish(const AttentionTask& task) {
    using namespace attention_vec;
    const AttentionTilingData& t = *t_;
    SyncPipes<HardEvent::MTE3_V>();  // the previous task's out and stats copies have read their buffers
    const uint32_t vp = t.vPitch, L = uint32_t(kAttentionStatLanes);
    LocalTensor<float> o = oBuf_.Get<float>(), stat = statBuf_.Get<float>(), blocks = blocksBuf_.Get<float>();
    LocalTensor<float> stats = outStatBuf_.Get<float>(), mx = stats, sm = stats[OutStatRows() * L];
    LocalTensor<float> m = stat[TaskRow(set_, kMax0 + cur_) * kMaxRows], l = stat[TaskRow(set_, kSum) * kMaxRows];
    LocalTensor<float> keep = stat[kKeep * kMaxRows];
    LocalTensor<float> f = stat[kRed * kMaxRows], t0 = stat[kTmp0 * kMaxRows], t1 = stat[kTmp1 * kMaxRows];
    const int32_t rows = int32_t(rows_);
    Adds(keep, m, -kMasked, rows);  // 0 where the max stayed kMasked (no key kept), >= 1 elsewhere
    Mins(keep, keep, 1.0f, rows);
    Maxs(f, l, 1.0f, rows);  // l >= 1 where a key was kept; a row that saw no block has l = 0
    Div(f, keep, f, rows);
    RowScale(row_ops::Op::kMul, o, f, blocks, rows_, vp, vp);
    Adds(t0, keep, -1.0f, rows);  // 0 kept, -1 not
    Muls(t1, t0, kFltMax, rows);
    Mul(f, m, keep, rows);
    Add(f, f, t1, rows);  // m, or -FLT_MAX
    RowBlocks(mx, f, rows_);
    Muls(t1, t0, -kFltMax, rows);
    Mul(t0, l, keep, rows);
    Add(t0, t0, t1, rows);  // l, or FLT_MAX
    RowBlocks(sm, t0, rows_);
    SyncPipes<HardEvent::V_MTE3>();
    for (uint32_t r = 0; r < rows_;) {  // runs of rows one GM stride apart
      const AttentionRowRun run = AttentionRun(t, task, r0_ + r, r0_ + rows_);
      WriteRun(task, run, o[r * vp], stats[r * L], sm[r * L]);
      r += run.count;
    }
  }

  // A run's rows of out (fp32 O, cast to T on the way) and of softmax_max / softmax_sum (8 lanes a row).
  __aicore__ inline void WriteRun(const AttentionTask& task, const AttentionRowRun& run, const LocalTensor<float>& o,
                                  const LocalTensor<float>& mx, const LocalTensor<float>& sm) {
    const AttentionTilingData& t = *t_;
    const bool stacked = t.stackHeads > 1;
    const uint32_t vp = t.vPitch, dv = uint32_t(t.valueDim), L = uint32_t(kAttentionStatLanes), rows = run.count;
    const int64_t stride = stacked ? t.oStrideN : t.oStrideS;
    const int64_t oOff = task.b * t.oStrideB + run.head * t.oStrideN + (task.qTok0 + run.row) * t.oStrideS;
    const uint32_t gap = uint32_t((stride - t.valueDim) * int64_t(sizeof(T)));
    const uint32_t rowBytes = (dv * sizeof(T) + 31) / 32 * 32;
    if constexpr (sizeof(T) == 4) {
      DataCopyPad(out_[oOff], o, DataCopyExtParams(uint16_t(rows), dv * 4, (vp * 4 - rowBytes) / 32, gap, 0));
    } else {
      LocalTensor<T> staged = boundBuf_.Get<T>();
      const uint32_t chunk = (maxRows_ * uint32_t(t.s2Block) * 4) / (vp * uint32_t(sizeof(T)));
      for (uint32_t c = 0; c < rows; c += chunk) {
        const uint32_t rc = rows - c < chunk ? rows - c : chunk;
        SyncPipes<HardEvent::MTE3_V>();
        Cast(staged, o[c * vp], RoundMode::CAST_RINT, rc * vp);
        SyncPipes<HardEvent::V_MTE3>();
        DataCopyPad(
            out_[oOff + int64_t(c) * stride], staged,
            DataCopyExtParams(uint16_t(rc), dv * sizeof(T), (vp * uint32_t(sizeof(T)) - rowBytes) / 32, gap, 0));
      }
    }
    // stats rows, 8 floats each: [B, N1, S1, 8]; TND (torch_npu's default) one [N1, s1, 8] block per sequence;
    // stacked heads' rows are s1 rows apart
    const int64_t sOff = t.varlen ? (task.qTok0 * t.heads + run.head * task.s1 + run.row) * int64_t(L)
                                  : ((task.b * t.heads + run.head) * task.s1 + run.row) * int64_t(L);
    const DataCopyExtParams sp(uint16_t(rows), L * 4, 0, stacked ? uint32_t((task.s1 - 1) * int64_t(L) * 4) : 0, 0);
    DataCopyPad(max_[sOff], mx, sp);
    DataCopyPad(sum_[sOff], sm, sp);
  }

  // rows of each output statistic in outStatBuf_: Brcb writes whole groups of 8
  __aicore__ inline uint32_t OutStatRows() const { return (maxRows_ + 7) / 8 * 8; }

  const AttentionTilingData* t_ = nullptr;
  uint32_t sub_ = 0, r0_ = 0, rows_ = 0, maxRows_ = 0;  // maxRows_: the buffers' rows
  uint32_t set_ = 0, cur_ = 0;  // the task's statistics set, which of its max slots holds the running max
  int64_t blocks_ = 0;          // the group's blocks before the task's: block n takes workspace slots n % count
  Flight flights_[kAttentionPSlots];
  int64_t begun_ = 0, finished_ = 0;         // tasks
  int64_t softmaxed_ = 0, accumulated_ = 0;  // blocks of the stream
  GlobalTensor<float> sWs_, oWs_, max_, sum_, sink_;
  GlobalTensor<T> pWs_, out_;
  GlobalTensor<uint8_t> mask_;
  TPipe pipe_;
  TQue<TPosition::VECIN, 1> sQue_;   // S of the block in work and of the next
  TQue<TPosition::VECIN, 1> pvQue_;  // P V of a block (the tiling's pvBuffer)
  TBuf<TPosition::VECCALC> boundBuf_, maskBuf_, maskHalfBuf_, oBuf_, rampBuf_, rowRampBuf_, statBuf_, blocksBuf_,
      outStatBuf_;
  AttentionDropout dropout_;
};
