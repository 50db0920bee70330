// The AIVs' half of the fused attention backward (attention_grad.cpp). A step's query rows are split
// between the two AIVs at a multiple of 16 rows (so their halves of P^T start 32-byte aligned); per
// step, for its rows (fp32 throughout):
//   D = rowsum(dy * attention_in), once per row before any step (ProcessD: each group its query tasks' rows, then
//   SyncAll of the AIVs) into GM after the groups' workspaces, read back per step; with a sink also each AIV's sum
//   of p_sink * D over its rows of the task into a slot after D, which the first AIV sums per head into dsink after
//   the tasks (SinkPart, SinkGrad); m, 1 / l from softmax_max / sum;
//   P = exp(min(S * scale, mask bound) - m) / l -- the forward's P, recomputed (attention_mask.h);
//   dS = P * (dP - D), times 1 - tanh^2 of the softcap (the same tanh) when the forward capped S; with dropout
//   dP is first multiplied by Z = keep / keep_prob (drop_mask, attention_dropout.h) and key tasks' P, for dv, too;
//   key tasks: P and dS in the input dtype into the workspace as they are (the cube transposes them as it loads
//   them), fp32 transposed by Gather as P^T / dS^T (kAttentionGradCubeTransposes);
//   query tasks: dS into the workspace as is; flag kPReady.
// Once the AIC flags kRReady the task's sums (summed in its L0C over the task's steps; without the tiling's
// l0cSums each step's parts) are added into fp32 sums in UB -- key tasks split the keys between the AIVs as
// they split rows, query tasks keep their rows -- and kRFree is flagged. At the task's end
// dk = scale * sum dS^T Q, dv = sum P^T dy, dq = scale * sum dS K are cast once and written.
// The group's steps (key tasks', then query tasks') are one stream, as on the AIC (attention_grad_cube.h):
// with two sets of S / dP / statistics buffers (the tiling's vecSets) the loads of step n + 1 are issued before
// step n is formed, so they run under its vector work instead of after it; dS of step n + kAttentionGradLead is
// formed before the parts of step n are added in, so the AIVs work on
// the next steps while the cube multiplies this one's; a task's sums go out after its last step's parts, the next
// task's first steps already under way (the sums are zeroed at a task's first parts). A row that kept no key in the
// forward (softmax_max = -FLT_MAX) has m raised to kMaxFloor, so its P is 0.
#pragma once
#include "attention_dropout.h"
#include "attention_grad_task.h"
#include "attention_mask.h"
#include "kernel_utils.h"

namespace attention_grad_vec {
constexpr float kMaxFloor = -1e29f;  // above kMasked: exp(kMasked - kMaxFloor) is 0
using row_ops::kMaxRows;      // rows of one AIV: s1Block <= 128
constexpr uint32_t kRowBlock = kMaxRows * row_ops::kBlock;  // floats of one set of per-row blocks
// blocksBuf_'s sets of per-row blocks (Blocks, kBlockSets) are the buffer plan's, tiling/attention_buffers.h.
}  // namespace attention_grad_vec

template <typename T>
class AttentionGradVector {
 public:
  __aicore__ inline void Init(GM_ADDR mask, GM_ADDR dy, GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR attentionIn,
                              GM_ADDR dropMask, GM_ADDR sink, GM_ADDR dq, GM_ADDR dk, GM_ADDR dv, GM_ADDR dsink,
                              GM_ADDR ws, const AttentionGradTilingData& g, GM_ADDR table) {
    using namespace attention_grad_vec;
    g_ = &g;
    const AttentionTilingData& t = g.fwd;
    sub_ = uint32_t(GetSubBlockIdx());
    for (int64_t slot = 0; slot < kAttentionGradSlots; ++slot)
      ws_[slot].Init(ws + (GetBlockIdx() / GetTaskRation()) * g.workspacePerGroup + slot * g.slotBytes, g);
    d_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws + g.dOffset));
    if (t.maskFull) mask_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(mask));
    if (t.sink) {
      sink_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(sink), t.heads);
      dsink_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(dsink), t.heads);
      sinkParts_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws + g.sinkOffset));
    }
    dy_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy));
    o_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(attentionIn));
    max_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(softmaxMax));
    sum_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(softmaxSum));
    dq_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dq));
    dk_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dk));
    dv_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dv));
    const uint32_t s2b = t.s2Block, dp = g.dPitch, vp = t.vPitch;
    maxRows_ = AttentionGradHalf(uint32_t(t.s1Block)), maxKeys_ = AttentionGradHalf(s2b);
    const uint32_t area = maxRows_ * s2b;  // elements of one row block of S
    // the buffer plan the tiling counted (tiling/attention_buffers.h), in its order
    sets_ = uint32_t(g.vecSets);
    const AttentionGradVectorUb ub =
        AttentionGradVectorBuffers(maxRows_, maxKeys_, s2b, dp, vp, sizeof(T), t.maskFull, sets_, t.dropout);
    for (uint32_t k = 0; k < sets_; ++k) {
      pipe_.InitBuffer(sBuf_[k], ub.s);
      pipe_.InitBuffer(dpBuf_[k], ub.dp);
      pipe_.InitBuffer(statBuf_[k], ub.stats);
      loadedEvt_[k] = pipe_.AllocEventID<HardEvent::MTE2_V>();
    }
    pipe_.InitBuffer(boundBuf_, ub.bound);
    if (t.maskFull) {
      pipe_.InitBuffer(maskBuf_, ub.mask);
      pipe_.InitBuffer(maskHalfBuf_, ub.maskHalf);
    }
    pipe_.InitBuffer(stageBuf_, ub.stage);
    pipe_.InitBuffer(offsetBuf_, ub.offsets);
    pipe_.InitBuffer(accBuf_, ub.acc);
    pipe_.InitBuffer(rampBuf_, ub.ramp);
    pipe_.InitBuffer(rowRampBuf_, ub.rowRamp);
    pipe_.InitBuffer(rowBuf_, ub.rowValues);  // D, the band's two edges
    pipe_.InitBuffer(blocksBuf_, ub.blocks);
    if (t.dropout) dropout_.Init(pipe_, ub.drop, t, dropMask, table);
    LocalTensor<float> ramp = rampBuf_.Get<float>(), rowRamp = rowRampBuf_.Get<float>();
    for (uint32_t c = 0; c < s2b; ++c) ramp.SetValue(c, float(c));
    for (uint32_t r = 0; r < kMaxRows; ++r) rowRamp.SetValue(r, float(r));
    // lanes past the rows stay defined: Brcb and BlockReduce read whole groups of 8 rows
    Duplicate(rowBuf_.Get<float>(), 0.0f, int32_t(3 * kMaxRows));
    Duplicate(blocksBuf_.Get<float>(), 0.0f, int32_t(kBlockSets * kRowBlock));
    // stride gaps the copies skip stay finite (they are added, never stored), lanes past the rows defined
    for (uint32_t k = 0; k < sets_; ++k) {
      Duplicate(sBuf_[k].Get<float>(), 0.0f, int32_t(area));
      Duplicate(dpBuf_[k].Get<float>(), 0.0f, int32_t(area));
      Duplicate(statBuf_[k].Get<float>(), 0.0f, int32_t(ub.stats / 4));
    }
  }

  // D of the rows of this group's query tasks (with a sink also their d_sink partials), then a barrier of every AIV:
  // after it every row's D, and every partial, is in GM.
  __aicore__ inline void ProcessD(AttentionTaskWalk& walk) {
    AttentionTask task;
    while (walk.Next(task)) {
      Split(uint32_t(task.rows), r0_, rows_);
      const int64_t slot = g_->fwd.sink ? SinkSlot(task) : -1;
      if (rows_ > 0) {
        ComputeD(Step{task.b, task.n, task.i0, 0, task.s1, task.s2, task.qTok0, uint32_t(task.rows), 0}, slot);
      } else if (slot >= 0) {  // no rows of this AIV: an empty sum
        Duplicate(SinkPartOut(), 0.0f, int32_t(row_ops::kBlock));
        SyncPipes<HardEvent::V_MTE3>();
        WriteSinkPart(slot);
        SyncPipes<HardEvent::MTE3_V>();
      }
    }
    SyncPipes<HardEvent::MTE3_MTE2>();
    SyncAll();
  }

  // The group's key tasks, then its query tasks, as one stream of steps.
  __aicore__ inline void Process(AttentionTaskWalk& keys, AttentionTaskWalk& queries) {
    AttentionTask task;
    while (keys.Next(task)) KeyTask(task);
    while (queries.Next(task)) QueryTask(task);
    Drain();
    for (uint32_t k = 0; k < sets_; ++k) pipe_.ReleaseEventID<HardEvent::MTE2_V>(loadedEvt_[k]);
  }

  // With a sink, after Process (ProcessD's SyncAll put every partial in GM): the launch's first AIV sums each head's
  // partials in slot order, 64 lanes at a time then one ReduceSum, and writes dsink[h] = -sum, 64 heads a copy.
  __aicore__ inline void SinkGrad() {
    using namespace attention_grad_vec;
    const AttentionTilingData& t = g_->fwd;
    if (!t.sink || GetBlockIdx() != 0) return;
    constexpr uint32_t kSlots = 64;  // 8 floats each: within S's buffer (>= 16 rows x 32 keys)
    LocalTensor<float> buf = sBuf_[0].Get<float>(), blocks = blocksBuf_.Get<float>(), out = rowBuf_.Get<float>();
    LocalTensor<float> vals = blocks[kM * kRowBlock], acc = blocks[kInvL * kRowBlock], sum = blocks[kD * kRowBlock];
    const int64_t slots = 2 * g_->headTasks;
    SyncPipes<HardEvent::MTE3_MTE2>();
    for (int64_t h0 = 0; h0 < t.heads; h0 += kMaxRows) {
      const uint32_t hn = uint32_t(t.heads - h0 < int64_t(kMaxRows) ? t.heads - h0 : kMaxRows);
      for (uint32_t h = 0; h < hn; ++h) {
        Duplicate(acc, 0.0f, int32_t(kSlots));
        for (int64_t c = 0; c < slots; c += kSlots) {
          const uint32_t k = uint32_t(slots - c < int64_t(kSlots) ? slots - c : kSlots);
          if (k < kSlots) Duplicate(buf, 0.0f, int32_t(kSlots * row_ops::kBlock));  // a short load's lanes add 0
          SyncPipes<HardEvent::V_MTE2>();
          DataCopyPad(buf, sinkParts_[((h0 + h) * slots + c) * row_ops::kBlock], DataCopyExtParams(1, k * 32, 0, 0, 0),
                      DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
          SyncPipes<HardEvent::MTE2_V>();
          BlockReduceMax(vals, buf, int32_t(kSlots / row_ops::kBlock), int32_t(row_ops::kLanes), 1, 1,
                         int32_t(row_ops::kBlock));  // a slot's 8 equal lanes: its sum, exactly
          Add(acc, acc, vals, int32_t(kSlots));
        }
        ReduceSum(sum, acc, vals, int32_t(kSlots));
        SyncPipes<HardEvent::V_S>();
        out.SetValue(h, -sum.GetValue(0));
        SyncPipes<HardEvent::S_V>();
      }
      SyncPipes<HardEvent::S_MTE3>();
      DataCopyPad(dsink_[h0], out, DataCopyExtParams(1, hn * 4, 0, 0, 0));
      SyncPipes<HardEvent::MTE3_S>();
    }
  }

 private:
  using Flags = AttentionGradFlags;
  // One step: query rows [i0, i0 + rows) of head n against keys [j0, j0 + cols) of a batch.
  struct Step {
    int64_t b, n, i0, j0, s1, s2, qTok0;
    uint32_t rows, cols;
  };

  __aicore__ static inline uint32_t Align16(uint32_t x) { return (x + 15) / 16 * 16; }

  // This AIV's share of `count`: the first Align16(ceil(count / 2)) to AIV 0, the rest to AIV 1.
  __aicore__ inline void Split(uint32_t count, uint32_t& first, uint32_t& mine) const {
    uint32_t half = Align16((count + 1) / 2);
    if (half > count) half = count;
    first = sub_ == 0 ? 0 : half;
    mine = sub_ == 0 ? half : count - half;
  }

  // A step whose dS is out and whose parts are still to be added: its task, and whether it is the task's
  // first (the sums start at 0) and last (the sums go out after it).
  struct Pending {
    AttentionTask task;
    bool key, first, last;
  };
  // A step whose loads are issued and which is still to be formed: this AIV's rows of it, whether it is a key
  // step and whether its statistics were loaded (a query task's first step; its blocks serve the task's steps).
  struct Loaded {
    Step st;
    uint32_t r0, rows;
    bool key, stats;
    Pending p;
  };

  __aicore__ inline void KeyTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t cols = uint32_t(task.rows);
    if (task.count == 0) {  // no row keeps these keys: dk, dv = 0, written in their turn
      Drain();
      Finish(Pending{task, true, true, true});
      return;
    }
    const int64_t group = t.heads / t.kvHeads, end = (task.n + 1) * group;
    for (int64_t n = task.n * group; n < end; ++n) {
      for (int64_t blk = task.first; blk < task.first + task.count; ++blk) {
        const int64_t i0 = blk * t.s1Block;
        const Step st{task.b,  n,       i0,         task.i0,
                      task.s1, task.s2, task.qTok0, uint32_t(task.s1 - i0 < t.s1Block ? task.s1 - i0 : t.s1Block),
                      cols};
        Next(st, true, true,
             Pending{task, true, n == task.n * group && blk == task.first,
                     n + 1 == end && blk + 1 == task.first + task.count});
      }
    }
  }

  __aicore__ inline void QueryTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    if (task.count == 0) {  // every row fully masked: dq = 0
      Drain();
      Finish(Pending{task, false, true, true});
      return;
    }
    Step st{task.b, task.n, task.i0, 0, task.s1, task.s2, task.qTok0, uint32_t(task.rows), 0};
    for (int64_t idx = 0; idx < task.count; ++idx) {
      st.j0 = (task.first + idx) * t.s2Block;
      st.cols = uint32_t(task.s2 - st.j0 < t.s2Block ? task.s2 - st.j0 : t.s2Block);
      // the task's rows' statistics: the same for each of its steps
      Next(st, false, idx == 0, Pending{task, false, idx == 0, idx + 1 == task.count});
    }
  }

  // The stream's next step: its statistics (with `stats`) and, once the AIC flags kSReady, S and dP into buffer
  // set loadedCount_ % sets_; then, with two sets, the step before it is formed (its loads were issued a step
  // ago), else this one.
  __aicore__ inline void Next(const Step& st, bool key, bool stats, const Pending& p) {
    Loaded& l = loaded_[loadedCount_ % 2];
    l = Loaded{st, 0, 0, key, stats, p};
    Split(st.rows, l.r0, l.rows);
    const uint32_t set = uint32_t(loadedCount_ % sets_);
    if (l.rows > 0) {
      SyncPipes<HardEvent::V_MTE2>();  // V is done with the set (the step formed before the last one used it)
      if constexpr (sizeof(T) == 4) SyncPipes<HardEvent::MTE3_MTE2>();  // fp32: that step's dS went out of it
      if (stats) LoadStats(l, set);
    }
    CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kSReady);
    if (l.rows > 0) {
      LoadScores(l, set);
      SetFlag<HardEvent::MTE2_V>(loadedEvt_[set]);
    }
    ++loadedCount_;
    if (loadedCount_ - formed_ >= int64_t(sets_)) FormOldest();
  }

  // The oldest loaded step: P and dS of this AIV's rows, out to the workspace (key steps transposed).
  __aicore__ inline void FormOldest() {
    const Loaded& l = loaded_[formed_ % 2];
    const uint32_t set = uint32_t(formed_ % sets_);
    r0_ = l.r0, rows_ = l.rows;
    if (rows_ > 0) {
      WaitFlag<HardEvent::MTE2_V>(loadedEvt_[set]);
      if (l.stats) StatBlocks(set);
      Grad(l.st, set, l.key);
      if (l.key) StoreKeyParts(l.st, set);
      else StoreDs(l.st, set);
    }
    Formed(l.p);
  }

  // The step just formed (its P^T / dS out) joins the stream: flag kPReady; the oldest step gets its parts
  // added once kAttentionGradLead steps are ahead of it.
  __aicore__ inline void Formed(const Pending& p) {
    CrossCoreSetFlag<2, PIPE_MTE3>(Flags::kPReady);
    pending_[formed_ % kAttentionGradSlots] = p;
    ++formed_;
    if (formed_ - added_ > kAttentionGradLead) AddOldest();
  }

  // The workspace slot of the step being formed.
  __aicore__ inline const AttentionGradWorkspace<T>& FormSlot() const { return ws_[formed_ % kAttentionGradSlots]; }

  __aicore__ inline void Drain() {
    while (formed_ < loadedCount_) FormOldest();
    while (added_ < formed_) AddOldest();
  }

  // The oldest step's parts: once the AIC flags kRReady, the result slot's sums (the task's, at its last step
  // with L0C sums; else the step's) into the UB sums, flag kRFree; after a task's last step its sums go out.
  __aicore__ inline void AddOldest() {
    const AttentionTilingData& t = g_->fwd;
    const Pending& p = pending_[added_ % kAttentionGradSlots];
    const uint32_t dp = g_->dPitch, vp = t.vPitch;
    uint32_t first, mine;  // this AIV's keys (key tasks) or rows (query tasks)
    Split(uint32_t(p.task.rows), first, mine);
    LocalTensor<float> acc = accBuf_.Get<float>();
    if (p.first) ZeroSums(p.key);
    ++added_;
    if (g_->l0cSums != 0 && !p.last) return;
    const AttentionGradWorkspace<T>& ws = ws_[flushed_ % kAttentionGradSlots];
    CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kRReady);
    if (mine > 0 && p.key) {
      AddRows(acc, ws.r1[int64_t(first) * dp], mine, uint32_t(t.headDim), dp);
      AddRows(acc[maxKeys_ * dp], ws.r2[int64_t(first) * vp], mine, uint32_t(t.valueDim), vp);
    } else if (mine > 0) {
      AddRows(acc, ws.r1[int64_t(first) * dp], mine, uint32_t(t.headDim), dp);
    }
    CrossCoreSetFlag<2, PIPE_MTE2>(Flags::kRFree);
    ++flushed_;
    if (p.last) Finish(p);
  }

  // The sums of a task start at 0 (once the previous task's stores have read them).
  __aicore__ inline void ZeroSums(bool key) {
    const uint32_t dp = g_->dPitch, vp = g_->fwd.vPitch;
    SyncPipes<HardEvent::MTE3_V>();
    Duplicate(accBuf_.Get<float>(), 0.0f, int32_t(key ? maxKeys_ * (dp + vp) : maxRows_ * dp));
  }

  // A task's sums, cast once and written: dk = scale * sum dS^T Q and dv = sum P^T dy of this AIV's keys, or
  // dq = scale * sum dS K of its rows. A task without steps writes zeros.
  __aicore__ inline void Finish(const Pending& p) {
    const AttentionTilingData& t = g_->fwd;
    const AttentionTask& task = p.task;
    const uint32_t dp = g_->dPitch, vp = t.vPitch;
    uint32_t first, mine;
    Split(uint32_t(task.rows), first, mine);
    if (task.count == 0) ZeroSums(p.key);
    if (mine == 0) return;
    LocalTensor<float> acc = accBuf_.Get<float>();
    if (p.key) {
      const int64_t j = task.kTok0 + task.i0 + first;
      Store(dk_, task.b * t.kStrideB + task.n * t.kStrideN + j * t.kStrideS, t.kStrideS, acc, dp, mine,
            uint32_t(t.headDim), t.scale);
      Store(dv_, task.b * t.vStrideB + task.n * t.vStrideN + j * t.vStrideS, t.vStrideS, acc[maxKeys_ * dp], vp, mine,
            uint32_t(t.valueDim), 1.0f);
    } else {
      const int64_t row = task.qTok0 + task.i0 + first;
      Store(dq_, task.b * t.qStrideB + task.n * t.qStrideN + row * t.qStrideS, t.qStrideS, acc, dp, mine,
            uint32_t(t.headDim), t.scale);
    }
  }

  // D = rowsum(dy * attention_in) of this AIV's rows (through the S / dP buffers, chunks of rows) into the
  // launch's D rows in GM (DRow), once per row: the steps read it back (LoadStats). With a sink (slot >= 0) also
  // their d_sink partial (SinkPart) into `slot`, its statistics loaded beside the first chunk, written beside D.
  __aicore__ inline void ComputeD(const Step& st, int64_t slot) {
    using namespace attention_grad_vec;
    const AttentionTilingData& t = g_->fwd;
    const uint32_t vp = t.vPitch, dv = uint32_t(t.valueDim), elems = PaddedLen<T>(dv), area = maxRows_ * t.s2Block;
    const int64_t row = st.qTok0 + st.i0 + r0_;
    const int64_t off = st.b * t.oStrideB + st.n * t.oStrideN + row * t.oStrideS;
    LocalTensor<float> x = sBuf_[0].Get<float>(), y = dpBuf_[0].Get<float>(), d = rowBuf_.Get<float>();
    LocalTensor<float> blocks = blocksBuf_.Get<float>();
    // rows a pass (the tiling keeps it >= 1): 8 at a time so D lands 32-byte aligned, else (D > 256) a few rows
    // reduced into the band's edge row, then moved by the scalar unit
    const uint32_t fit = area / vp, chunk = fit >= 8 ? fit / 8 * 8 : fit;
    const DataCopyPadExtParams<T> pad(elems != dv, 0, uint8_t(elems - dv), T(0.0f));
    for (uint32_t c = 0; c < rows_; c += chunk) {
      const uint32_t rc = rows_ - c < chunk ? rows_ - c : chunk;
      const DataCopyExtParams cp(uint16_t(rc), dv * sizeof(T), uint32_t((t.oStrideS - dv) * sizeof(T)),
                                 (vp - elems) * uint32_t(sizeof(T)) / 32, 0);
      SyncPipes<HardEvent::V_MTE2>();   // V is done with the buffers
      SyncPipes<HardEvent::MTE3_MTE2>();  // and the last step's copies out with the staging one
      if (slot >= 0 && c == 0) LoadSinkStats(st);
      if constexpr (sizeof(T) == 4) {
        DataCopyPad(x, dy_[off + int64_t(c) * t.oStrideS], cp, pad);
        DataCopyPad(y, o_[off + int64_t(c) * t.oStrideS], cp, pad);
        SyncPipes<HardEvent::MTE2_V>();
      } else {
        LocalTensor<T> stage = stageBuf_.Get<T>();
        DataCopyPad(stage, dy_[off + int64_t(c) * t.oStrideS], cp, pad);
        DataCopyPad(stage[area], o_[off + int64_t(c) * t.oStrideS], cp, pad);
        SyncPipes<HardEvent::MTE2_V>();
        Cast(x, stage, RoundMode::CAST_NONE, rc * vp);
        Cast(y, stage[area], RoundMode::CAST_NONE, rc * vp);
      }
      Mul(x, x, y, int32_t(rc * vp));
      if (chunk % 8 == 0) {
        RowReduce<true>(d[c], x, boundBuf_.Get<float>(), blocks[kBand * kRowBlock], rc, elems, vp);
        continue;
      }
      LocalTensor<float> few = d[kMaxRows];  // free until Grad's band
      RowReduce<true>(few, x, boundBuf_.Get<float>(), blocks[kBand * kRowBlock], rc, elems, vp);
      SyncPipes<HardEvent::V_S>();
      for (uint32_t r = 0; r < rc; ++r) d.SetValue(c + r, few.GetValue(r));
      SyncPipes<HardEvent::S_V>();
    }
    const bool sink = slot >= 0;
    if (sink) SinkPart(st);
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(d_[DRow(st, r0_)], d, DataCopyExtParams(1, rows_ * 4, 0, 0, 0));
    if (sink) WriteSinkPart(slot);
    SyncPipes<HardEvent::MTE3_V>();  // the buffers are V's again
  }

  // The rows' m and l (softmax_max / softmax_sum, 8 lanes each) into the first set's statistics, for SinkPart.
  __aicore__ inline void LoadSinkStats(const Step& st) {
    const uint32_t L = uint32_t(kAttentionStatLanes);
    const int64_t row = DRow(st, r0_) * int64_t(L);
    LocalTensor<float> stats = statBuf_[0].Get<float>();
    const DataCopyExtParams sp(1, rows_ * L * 4, 0, 0, 0);
    DataCopyPad(stats, max_[row], sp, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
    DataCopyPad(stats[maxRows_ * L], sum_[row], sp, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
  }

  // This AIV's sum over its rows of p_sink * D (D in rowBuf_), p_sink = exp(sink - m) / l (LoadSinkStats'), as 8
  // copies in SinkPartOut(): the combining BlockReduceMax takes the sum back exactly.
  __aicore__ inline void SinkPart(const Step& st) {
    using namespace attention_grad_vec;
    const uint32_t L = uint32_t(kAttentionStatLanes);
    LocalTensor<float> stats = statBuf_[0].Get<float>(), blocks = blocksBuf_.Get<float>();
    LocalTensor<float> p = blocks[kM * kRowBlock], l = blocks[kInvL * kRowBlock], sum = blocks[kD * kRowBlock];
    // a row's 8 equal lanes: its m and l, exactly
    const int32_t groups = int32_t((rows_ + row_ops::kBlock - 1) / row_ops::kBlock), n = int32_t(rows_);
    BlockReduceMax(p, stats, groups, int32_t(row_ops::kLanes), 1, 1, int32_t(row_ops::kBlock));
    BlockReduceMax(l, stats[maxRows_ * L], groups, int32_t(row_ops::kLanes), 1, 1, int32_t(row_ops::kBlock));
    Muls(p, p, -1.0f, n);
    Adds(p, p, sink_.GetValue(st.n), n);
    Exp(p, p, n);
    Div(p, p, l, n);
    Mul(p, p, rowBuf_.Get<float>(), n);
    ReduceSum(sum, p, l, n);
    Brcb(SinkPartOut(), sum, 1, BrcbRepeatParams(1, row_ops::kBlock));
  }

  // The 32 bytes a task's partial leaves from (8 copies), after the sum's block.
  __aicore__ inline LocalTensor<float> SinkPartOut() {
    return blocksBuf_.Get<float>()[attention_grad_vec::kD * attention_grad_vec::kRowBlock + row_ops::kBlock];
  }

  __aicore__ inline void WriteSinkPart(int64_t slot) {
    DataCopyPad(sinkParts_[slot * row_ops::kBlock], SinkPartOut(), DataCopyExtParams(1, 32, 0, 0, 0));
  }

  // The task's slot: head n's tasks are the pass's (batches, then heads, then blocks) with that head, in order.
  __aicore__ inline int64_t SinkSlot(const AttentionTask& task) const {
    const AttentionTilingData& t = g_->fwd;
    const int64_t perHead = (task.s1 + t.s1Block - 1) / t.s1Block, block = task.i0 / t.s1Block;
    const int64_t earlier = (task.index - task.n * perHead - block) / t.heads;  // head n's blocks of earlier batches
    return 2 * (task.n * g_->headTasks + earlier + block) + sub_;
  }

  // A step's first row in the statistics' rows (softmax_max / softmax_sum hold 8 lanes each; D one).
  __aicore__ inline int64_t DRow(const Step& st, uint32_t r0) const {
    const AttentionTilingData& t = g_->fwd;
    return t.varlen ? st.qTok0 * t.heads + st.n * st.s1 + st.i0 + r0 : (st.b * t.heads + st.n) * st.s1 + st.i0 + r0;
  }

  // The step's rows' m and 1 / l rows (softmax_max / softmax_sum, 8 lanes each) and D (ComputeD's) into set `set`.
  __aicore__ inline void LoadStats(const Loaded& l, uint32_t set) {
    const uint32_t L = uint32_t(kAttentionStatLanes);
    const int64_t row = DRow(l.st, l.r0);
    LocalTensor<float> stats = statBuf_[set].Get<float>();
    const uint32_t pad = (l.rows + 7) / 8 * 8 - l.rows;  // Brcb reads whole groups of 8 rows: keep them defined
    DataCopyPad(stats[2 * maxRows_ * L], d_[row], DataCopyExtParams(1, l.rows * 4, 0, 0, 0),
                DataCopyPadExtParams<float>(pad != 0, 0, uint8_t(pad), 0.0f));
    const DataCopyExtParams sp(1, l.rows * L * 4, 0, 0, 0);
    DataCopyPad(stats, max_[row * int64_t(L)], sp, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
    DataCopyPad(stats[maxRows_ * L], sum_[row * int64_t(L)], sp, DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
  }

  // The step's S and dP rows of this AIV from its workspace slot into set `set`, rows Align8(cols) apart.
  __aicore__ inline void LoadScores(const Loaded& l, uint32_t set) {
    using namespace attention_mask;
    const uint32_t cols = l.st.cols, pp = (cols + 7) / 8 * 8, s2b = uint32_t(g_->fwd.s2Block);
    const AttentionGradWorkspace<T>& ws = ws_[loadedCount_ % kAttentionGradSlots];
    const DataCopyExtParams cp(uint16_t(l.rows), cols * 4, (s2b - cols) * 4, 0, 0);
    DataCopyPad(sBuf_[set].Get<float>(), ws.s[int64_t(l.r0) * s2b], cp,
                DataCopyPadExtParams<float>(pp != cols, 0, uint8_t(pp - cols), kMasked));
    DataCopyPad(dpBuf_[set].Get<float>(), ws.dp[int64_t(l.r0) * s2b], cp,
                DataCopyPadExtParams<float>(pp != cols, 0, uint8_t(pp - cols), 0.0f));
  }

  // The rows' D, m and 1 / l (set `set`'s statistics) as per-row blocks (row_ops.h).
  __aicore__ inline void StatBlocks(uint32_t set) {
    using namespace attention_grad_vec;
    const uint32_t L = uint32_t(kAttentionStatLanes);
    LocalTensor<float> stats = statBuf_[set].Get<float>(), blocks = blocksBuf_.Get<float>();
    RowBlocks(blocks[kD * kRowBlock], stats[2 * maxRows_ * L], rows_);
    const int32_t n = int32_t(rows_ * L);  // the statistics' 8 lanes per row are the rows' blocks already
    Maxs(blocks[kM * kRowBlock], stats, kMaxFloor, n);
    Duplicate(blocks[kInvL * kRowBlock], 1.0f, n);
    Div(blocks[kInvL * kRowBlock], blocks[kInvL * kRowBlock], stats[maxRows_ * L], n);
  }

  // P (S's buffer) and dS (dP's) of this AIV's rows of the step (loaded into set `set`), rows pp = Align8(cols)
  // apart.
  __aicore__ inline void Grad(const Step& st, uint32_t set, bool key) {
    using namespace attention_mask;
    const AttentionTilingData& t = g_->fwd;
    const uint32_t cols = st.cols, pp = (cols + 7) / 8 * 8, n = rows_ * pp;
    LocalTensor<float> s = sBuf_[set].Get<float>(), dp = dpBuf_[set].Get<float>();
    if (t.dropout) LoadDropout(st);  // its copy runs under the work on S until dP Z
    uint32_t mp = 0;
    if (t.maskFull) {
      SyncPipes<HardEvent::V_MTE2>();  // V is done with the last step's mask
      mp = AttentionLoadMask(maskBuf_.Get<uint8_t>(), mask_, t, st.b, st.n, st.i0 + r0_, st.j0, rows_, cols);
      SyncPipes<HardEvent::MTE2_V>();
    }
    Muls(s, s, t.scale, int32_t(n));
    using row_ops::Op;
    using namespace attention_grad_vec;
    LocalTensor<float> blocks = blocksBuf_.Get<float>();
    const bool cap = t.softcap > 0.0f;
    if (cap) {  // dS = P (dP - D) w, w = 1 - tanh^2: dP w - D w now, while w is in the buffer the masks reuse
      if (t.dropout) Mul(dp, dp, DropoutFactors(st, pp), int32_t(n));  // dP Z, before w takes the buffer
      LocalTensor<float> w = boundBuf_.Get<float>();
      SoftcapBlock(s, w, n, t.softcap, true);
      Mul(dp, dp, w, int32_t(n));
      RowApply(Op::kMul, w, blocks[kD * kRowBlock], rows_, pp, pp);
      Sub(dp, dp, w, int32_t(n));
      AttentionMaskPad(s, w, rampBuf_.Get<float>(), rows_, cols, pp);
    }
    if (t.maskFull)
      AttentionApplyMask(s, boundBuf_.Get<float>(), maskBuf_.Get<uint8_t>(), maskHalfBuf_.Get<half>(), rows_, pp, mp);
    if (t.band)
      AttentionApplyBand(s, boundBuf_.Get<float>(), rampBuf_.Get<float>(), rowRampBuf_.Get<float>(),
                         rowBuf_.Get<float>()[kMaxRows], blocks[kBand * kRowBlock], t, st.i0 + r0_, st.i0 + r0_,
                         st.i0 + r0_ + rows_ - 1, rows_, st.s1, st.s2, st.j0, cols, pp);
    RowApply(Op::kSub, s, blocks[kM * kRowBlock], rows_, pp, pp);
    Exp(s, s, int32_t(n));
    RowApply(Op::kMul, s, blocks[kInvL * kRowBlock], rows_, pp, pp);
    // Z in the bound's buffer, free from here on: for dP Z (with the softcap, done before its w) and key steps' P Z
    const LocalTensor<float> z = t.dropout && (!cap || key) ? DropoutFactors(st, pp) : boundBuf_.Get<float>();
    if (t.dropout && !cap) Mul(dp, dp, z, int32_t(n));  // dP Z
    if (!cap) RowApply(Op::kSub, dp, blocks[kD * kRowBlock], rows_, pp, pp);
    Mul(dp, dp, s, int32_t(n));
    if (t.dropout && key) Mul(s, s, z, int32_t(n));  // P Z, which multiplied V: for dv
  }

  // The step's first drop_mask bit: its rows of head st.n from st.i0 + r0_, keys from st.j0.
  __aicore__ inline int64_t DropoutBit(const Step& st) {
    return dropout_.Bit(st.b, st.n, st.i0 + r0_, st.j0, st.s1, st.s2);
  }

  // The step's drop_mask bytes (MTE2; DropoutFactors syncs).
  __aicore__ inline void LoadDropout(const Step& st) { dropout_.Load(DropoutBit(st), st.s2, rows_, st.cols); }

  // Z = keep / keep_prob of the step's rows x keys from the loaded bytes, rows pp apart, in the bound's buffer.
  __aicore__ inline LocalTensor<float> DropoutFactors(const Step& st, uint32_t pp) {
    return dropout_.Factors(boundBuf_.Get<float>(), DropoutBit(st), st.s2, rows_, pp, g_->fwd.keepProbInv);
  }

  // fp32 rows `from` as the input dtype: cast into `to`, or `from` itself for fp32.
  __aicore__ inline LocalTensor<T> InInputDtype(const LocalTensor<T>& to, const LocalTensor<float>& from, uint32_t n) {
    if constexpr (sizeof(T) == 4) {
      return from.template ReinterpretCast<T>();
    } else {
      Cast(to, from, RoundMode::CAST_RINT, n);
      return to;
    }
  }

  // Key tasks: P and dS [rows, pp] in the input dtype into the workspace after the other AIV's rows; fp32:
  // transposed, P^T / dS^T [cols, s1Pitch], this AIV's columns.
  __aicore__ inline void StoreKeyParts(const Step& st, uint32_t set) {
    const uint32_t cols = st.cols, pp = (cols + 7) / 8 * 8, n = rows_ * pp, rp = Align16(rows_);
    if constexpr (kAttentionGradCubeTransposes<T>) {
      const uint32_t area = maxRows_ * uint32_t(g_->fwd.s2Block);
      LocalTensor<T> stage = stageBuf_.Get<T>();
      SyncPipes<HardEvent::MTE3_V>();  // the last step's copies out have read the staging buffer
      Cast(stage, sBuf_[set].Get<float>(), RoundMode::CAST_RINT, n);
      Cast(stage[area], dpBuf_[set].Get<float>(), RoundMode::CAST_RINT, n);
      SyncPipes<HardEvent::V_MTE3>();
      const DataCopyExtParams cp(1, n * uint32_t(sizeof(T)), 0, 0, 0);
      DataCopyPad(FormSlot().p[int64_t(r0_) * pp], stage, cp);
      DataCopyPad(FormSlot().ds[int64_t(r0_) * pp], stage[area], cp);
      return;
    }
    LocalTensor<uint32_t> offsets = offsetBuf_.Get<uint32_t>();
    if (rows_ != tRows_ || pp != tPitch_ || cols != tCols_) {  // dst [c, r] <- src [r, c], padding from [0, c]
      // column 0's rp offsets by the scalar, then columns [k, 2k) = columns [0, k) + k elements: a few vector adds
      // instead of cols x rp scalar writes (4,096 at 64 x 64, tens of us per core)
      SyncPipes<HardEvent::V_S>();
      for (uint32_t r = 0; r < rp; ++r) offsets.SetValue(r, (r < rows_ ? r : 0) * pp * uint32_t(sizeof(T)));
      SyncPipes<HardEvent::S_V>();
      const LocalTensor<int32_t> o = offsets.template ReinterpretCast<int32_t>();
      for (uint32_t k = 1; k < cols; k *= 2)
        Adds(o[k * rp], o, int32_t(k * sizeof(T)), int32_t((cols - k < k ? cols - k : k) * rp));
      tRows_ = rows_, tPitch_ = pp, tCols_ = cols;
    }
    LocalTensor<T> staged = boundBuf_.Get<T>(), stage = stageBuf_.Get<T>();
    const uint32_t area = cols * rp;
    const LocalTensor<T> p = InInputDtype(staged, sBuf_[set].Get<float>(), n);
    SyncPipes<HardEvent::MTE3_V>();  // the last step's copies out have read the staging buffer
    Gather(stage, p, offsets, 0, area);
    Gather(stage[area], InInputDtype(staged, dpBuf_[set].Get<float>(), n), offsets, 0, area);
    SyncPipes<HardEvent::V_MTE3>();
    const uint32_t bytes = rows_ * uint32_t(sizeof(T)), gap = (rp * uint32_t(sizeof(T)) - (bytes + 31) / 32 * 32) / 32;
    const DataCopyExtParams cp(uint16_t(cols), bytes, gap, (uint32_t(g_->s1Pitch) - rows_) * uint32_t(sizeof(T)), 0);
    DataCopyPad(FormSlot().p[r0_], stage, cp);
    DataCopyPad(FormSlot().ds[r0_], stage[area], cp);
  }

  // Query tasks: dS [rows, pp] in the input dtype into the workspace after the other AIV's rows.
  __aicore__ inline void StoreDs(const Step& st, uint32_t set) {
    const uint32_t pp = (st.cols + 7) / 8 * 8, n = rows_ * pp;
    SyncPipes<HardEvent::MTE3_V>();  // the last step's copies out have read the staging buffer
    const LocalTensor<T> ds = InInputDtype(stageBuf_.Get<T>(), dpBuf_[set].Get<float>(), n);
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(FormSlot().ds[int64_t(r0_) * pp], ds, DataCopyExtParams(1, n * uint32_t(sizeof(T)), 0, 0, 0));
  }

  // acc [rows, pitch] += the AIC's fp32 rows [rows, n] at `src` (pitch `pitch`), through the bound's buffer (free
  // between steps; S's may hold the next step's loads).
  __aicore__ inline void AddRows(const LocalTensor<float>& acc, const GlobalTensor<float>& src, uint32_t rows,
                                 uint32_t n, uint32_t pitch) {
    const uint32_t elems = PaddedLen<float>(n), chunk = maxRows_ * uint32_t(g_->fwd.s2Block) / pitch;
    LocalTensor<float> s = boundBuf_.Get<float>();
    for (uint32_t c = 0; c < rows; c += chunk) {
      const uint32_t rc = rows - c < chunk ? rows - c : chunk;
      SyncPipes<HardEvent::V_MTE2>();
      DataCopyPad(s, src[int64_t(c) * pitch],
                  DataCopyExtParams(uint16_t(rc), n * 4, (pitch - n) * 4, (pitch - elems) / 8, 0),
                  DataCopyPadExtParams<float>(elems != n, 0, uint8_t(elems - n), 0.0f));
      SyncPipes<HardEvent::MTE2_V>();
      Add(acc[c * pitch], acc[c * pitch], s, int32_t(rc * pitch));
    }
  }

  // dst rows (row pitch `stride` elements from `off`) = scale * acc [rows, n], cast once to the input dtype.
  __aicore__ inline void Store(const GlobalTensor<T>& dst, int64_t off, int64_t stride, const LocalTensor<float>& acc,
                               uint32_t pitch, uint32_t rows, uint32_t n, float scale) {
    if (scale != 1.0f) Muls(acc, acc, scale, int32_t(rows * pitch));
    const uint32_t rowBytes = (n * uint32_t(sizeof(T)) + 31) / 32 * 32;
    const uint32_t gap = uint32_t((stride - n) * int64_t(sizeof(T)));
    if constexpr (sizeof(T) == 4) {
      SyncPipes<HardEvent::V_MTE3>();
      DataCopyPad(dst[off], acc.template ReinterpretCast<T>(),
                  DataCopyExtParams(uint16_t(rows), n * 4, (pitch * 4 - rowBytes) / 32, gap, 0));
    } else {
      LocalTensor<T> stage = stageBuf_.Get<T>();
      const uint32_t chunk = 2 * maxRows_ * uint32_t(g_->fwd.s2Block) / pitch;
      for (uint32_t c = 0; c < rows; c += chunk) {
        const uint32_t rc = rows - c < chunk ? rows - c : chunk;
        SyncPipes<HardEvent::MTE3_V>();
        Cast(stage, acc[c * pitch], RoundMode::CAST_RINT, rc * pitch);
        SyncPipes<HardEvent::V_MTE3>();
        DataCopyPad(dst[off + int64_t(c) * stride], stage,
                    DataCopyExtParams(uint16_t(rc), n * uint32_t(sizeof(T)),
                                      (pitch * uint32_t(sizeof(T)) - rowBytes) / 32, gap, 0));
      }
    }
  }

  const AttentionGradTilingData* g_ = nullptr;
  uint32_t sub_ = 0, r0_ = 0, rows_ = 0, maxRows_ = 0, maxKeys_ = 0;
  uint32_t tRows_ = 0, tPitch_ = 0, tCols_ = 0;  // the shape Gather's offsets were built for
  Pending pending_[kAttentionGradSlots];
  Loaded loaded_[2];
  int64_t loadedCount_ = 0;  // the group's steps so far whose loads are issued
  int64_t formed_ = 0, added_ = 0;  // the group's steps so far whose dS is out / whose parts are added
  int64_t flushed_ = 0;  // result slots read (the AIC's sums, slot flushed_ % kAttentionGradSlots next)
  GlobalTensor<float> max_, sum_, d_;  // d_: every row's D, after the groups' workspaces
  GlobalTensor<float> sink_, dsink_, sinkParts_;  // sinkParts_: SinkPart's slots, after D
  GlobalTensor<T> dy_, o_, dq_, dk_, dv_;
  GlobalTensor<uint8_t> mask_;
  AttentionGradWorkspace<T> ws_[kAttentionGradSlots];
  TPipe pipe_;
  uint32_t sets_ = 1;  // the tiling's vecSets: buffer sets of S, dP and the statistics
  TEventID loadedEvt_[2]{};  // MTE2 -> V: a set's loads are in
  TBuf<TPosition::VECCALC> sBuf_[2], dpBuf_[2], statBuf_[2], boundBuf_, maskBuf_, maskHalfBuf_, stageBuf_, offsetBuf_,
      accBuf_, rampBuf_, rowRampBuf_, rowBuf_, blocksBuf_;
  AttentionDropout dropout_;
};
