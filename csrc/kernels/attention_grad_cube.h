// The AIC's half of the fused attention backward (attention_grad.cpp). Per step (query rows i, keys j):
//   Scores: S = Q_i K_j^T and dP = dy_i V_j^T (fp32) into the step's workspace slot, flag kSReady;
//   Parts:  once the AIVs flag kPReady (they recomputed P and formed dS = P * (dP - D)):
//     key tasks:   dv_j part = P^T dy_i and dk_j part = dS^T Q_i (P^T, dS^T from the workspace),
//     query tasks: dq_i part = dS K_j,
//   Fixpipe'd into the slot's results once the AIVs have read those of the step that used the slot last
//   (kRFree), flag kRReady.
// The group's steps, its key tasks' then its query tasks', are one stream, as in the forward
// (attention_cube.h): Scores of step n + lead before the Parts of step n (lead kAttentionGradLead with two
// L1 buffers, else 0), so the AIVs find the next S and dP ready when they finish a step and the cube
// never waits for a dS it could not have yet, across tasks and passes too. K_j, V_j of a key task and
// Q_i, dy_i of a query task stay in L1 for the task's Scores; the Parts load their own operands again (Q_i
// and dy_i of a key step, K_j of a query step), so no operand waits in L1 for steps in flight: a lead of 2
// takes no more L1 than the Scores' and Parts' own loads, double-buffered (eight buffers, the TPipe's
// MTE1 -> MTE2 hand-off ids), for one more read of those blocks per step.
// Q_i and dy_i serve as A (LoadData 2D) and as B (3Dv2) from one L1 tile each, K_j and V_j likewise.
#pragma once
#include "attention_grad_task.h"
#include "cube_matmul.h"

template <typename T>
class AttentionGradCube {
 public:
  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR dy, GM_ADDR ws,
                              const AttentionGradTilingData& g) {
    g_ = &g;
    const AttentionTilingData& t = g.fwd;
    q_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(q));
    k_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(k));
    v_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(v));
    dy_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(dy));
    for (int64_t slot = 0; slot < kAttentionGradSlots; ++slot)
      ws_[slot].Init(ws + GetBlockIdx() * g.workspacePerGroup + slot * g.slotBytes, g);
    lead_ = t.l1Buffers > 1 ? kAttentionGradLead : 0;
    const uint32_t s1b = t.s1Block, s2b = t.s2Block, dp = g.dPitch, vp = t.vPitch, s1p = g.s1Pitch;
    const uint8_t n = uint8_t(t.l1Buffers);
    pipe_.InitBuffer(qL1_, n, s1b * dp * sizeof(T));
    pipe_.InitBuffer(dyL1_, n, s1b * vp * sizeof(T));
    pipe_.InitBuffer(kL1_, n, s2b * dp * sizeof(T));
    pipe_.InitBuffer(vL1_, 1, s2b * vp * sizeof(T));
    pipe_.InitBuffer(partsL1_, 1, Max(2 * s2b * s1p, s1b * s2b) * sizeof(T));
    const uint32_t qk = t.qkChunk, rc = g.rowChunk, pv = t.pvChunk, big = Max(s1b, s2b);
    mm_.Init(pipe_, Max(big * qk, Max(s2b * rc, s1b * pv)) * sizeof(T), Max(big * qk, Max(rc, pv) * dp) * sizeof(T),
             Max(s1b * s2b, Max(s2b * Max(dp, vp), s1b * dp)) * sizeof(float), uint32_t(t.l0cBuffers));
  }

  // The group's key tasks, then its query tasks, as one stream of steps.
  __aicore__ inline void Process(AttentionTaskWalk& keys, AttentionTaskWalk& queries) {
    AttentionTask task;
    while (keys.Next(task)) {
      if (task.count == 0) continue;  // no query row keeps these keys: the AIVs write zeros
      KeyTask(task);
    }
    while (queries.Next(task)) {
      if (task.count == 0) continue;
      QueryTask(task);
    }
    while (parted_ < scored_) Parts();
    // the AIVs' last frees: every result read, nothing of this launch is left in flight
    for (int64_t n = scored_ > kAttentionGradSlots ? scored_ - kAttentionGradSlots : 0; n < scored_; ++n)
      CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);
  }

 private:
  using Flags = AttentionGradFlags;
  // A step whose Scores are out and whose Parts are still to come: where its Parts' operands are.
  struct Pending {
    bool key;
    uint32_t rows, cols;
    int64_t b, n, tok;  // key steps: Q_i, dy_i's head and first token; query steps: K_j's kv head and first key
  };

  __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }

  // S and dP of the stream's next step into its slot (Q_i / dy_i and K_j / V_j in L1), flag kSReady. The
  // slot's previous S and dP (step scored_ - kAttentionGradSlots) are read: its Parts, done before this,
  // waited for its dS.
  __aicore__ inline void Scores(const LocalTensor<T>& q, const LocalTensor<T>& dy, const LocalTensor<T>& k,
                                const LocalTensor<T>& v, uint32_t rows, uint32_t cols) {
    const AttentionTilingData& t = g_->fwd;
    const AttentionGradWorkspace<T>& ws = ws_[scored_ % kAttentionGradSlots];
    LocalTensor<float> s = mm_.ABt(q, rows, k, cols, uint32_t(t.headDim), t.qkChunk);
    mm_.FixOut(ws.s, s, rows, cols, uint32_t(t.s2Block));
    LocalTensor<float> dp = mm_.ABt(dy, rows, v, cols, uint32_t(t.valueDim), t.qkChunk);
    mm_.FixOut(ws.dp, dp, rows, cols, uint32_t(t.s2Block));
    CrossCoreSetFlag<2, PIPE_FIX>(Flags::kSReady);
  }

  // The step just scored joins the stream; the oldest gets its Parts once lead_ steps are ahead of it.
  __aicore__ inline void Scored(const Pending& p) {
    pending_[scored_ % kAttentionGradSlots] = p;
    ++scored_;
    if (scored_ - parted_ > lead_) Parts();
  }

  // The Parts of the stream's oldest step without them, into its slot's results, flag kRReady.
  __aicore__ inline void Parts() {
    const AttentionTilingData& t = g_->fwd;
    Pending& p = pending_[parted_ % kAttentionGradSlots];
    const AttentionGradWorkspace<T>& ws = ws_[parted_ % kAttentionGradSlots];
    const uint32_t d = uint32_t(t.headDim);
    if (p.key) {
      LocalTensor<T> q, dy;
      LoadQueryRows(p.b, p.n, p.tok, p.rows, q, dy);
      CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kPReady);
      LocalTensor<T> parts = LoadTransposed(ws, p.cols, p.rows);
      LocalTensor<T> pt = parts, dst = parts[uint32_t(t.s2Block) * uint32_t(g_->s1Pitch)];
      LocalTensor<float> dvPart =
          mm_.AB(pt, p.cols, dy, p.rows, uint32_t(t.valueDim), uint32_t(t.vPitch), g_->rowChunk);
      WaitResultsFree();
      mm_.FixOut(ws.r2, dvPart, p.cols, uint32_t(t.valueDim), uint32_t(t.vPitch));
      LocalTensor<float> dkPart = mm_.AB(dst, p.cols, q, p.rows, d, uint32_t(g_->dPitch), g_->rowChunk);
      mm_.FixOut(ws.r1, dkPart, p.cols, d, uint32_t(g_->dPitch));
      CrossCoreSetFlag<2, PIPE_FIX>(Flags::kRReady);
      partsL1_.FreeTensor(parts);
      qL1_.FreeTensor(q);
      dyL1_.FreeTensor(dy);
    } else {
      const uint32_t pitch = (p.cols + 7) / 8 * 8;  // the AIVs' row pitch of dS (attention_grad_vector.h)
      LocalTensor<T> k =
          mm_.Load(kL1_, k_[p.b * t.kStrideB + p.n * t.kStrideN + p.tok * t.kStrideS], p.cols, d, uint32_t(t.kStrideS));
      CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kPReady);
      LocalTensor<T> ds = mm_.Load(partsL1_, ws.ds, p.rows, p.cols, pitch);
      LocalTensor<float> dqPart = mm_.AB(ds, p.rows, k, p.cols, d, uint32_t(g_->dPitch), t.pvChunk);
      WaitResultsFree();
      mm_.FixOut(ws.r1, dqPart, p.rows, d, uint32_t(g_->dPitch));
      CrossCoreSetFlag<2, PIPE_FIX>(Flags::kRReady);
      partsL1_.FreeTensor(ds);
      kL1_.FreeTensor(k);
    }
    ++parted_;
  }

  // A key step's P^T and dS^T [cols, rows] (row pitch s1Pitch in the workspace) into one L1 tile, dS^T
  // s2Block * s1Pitch elements after P^T (as mm_.Load lays out one): one buffer for both keeps the AIC's eight
  // L1 buffers (Q, dy, K two each, V, these) within the TPipe's 8 MTE1 -> MTE2 hand-off event ids.
  __aicore__ inline LocalTensor<T> LoadTransposed(const AttentionGradWorkspace<T>& ws, uint32_t cols, uint32_t rows) {
    constexpr uint32_t c0 = 32 / sizeof(T);
    LocalTensor<T> x = partsL1_.template AllocTensor<T>();
    const Nd2NzParams nz(1, uint16_t(cols), uint16_t(rows), 0, uint16_t(g_->s1Pitch), uint16_t((cols + 15) / 16 * 16),
                         1, uint16_t(cols * c0));
    DataCopy(x, ws.p, nz);
    DataCopy(x[uint32_t(g_->fwd.s2Block) * uint32_t(g_->s1Pitch)], ws.ds, nz);
    partsL1_.EnQue(x);
    return partsL1_.template DeQue<T>();
  }

  // The slot's results of step parted_ - kAttentionGradSlots are read once the AIVs flag it.
  __aicore__ inline void WaitResultsFree() {
    if (parted_ >= kAttentionGradSlots) CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);
  }

  // query (token) rows [row, row + rows) of batch b, head n into L1: q and dy, both walks' left operands.
  __aicore__ inline void LoadQueryRows(int64_t b, int64_t n, int64_t row, uint32_t rows, LocalTensor<T>& q,
                                       LocalTensor<T>& dy) {
    const AttentionTilingData& t = g_->fwd;
    q = mm_.Load(qL1_, q_[b * t.qStrideB + n * t.qStrideN + row * t.qStrideS], rows, uint32_t(t.headDim),
                 uint32_t(t.qStrideS));
    dy = mm_.Load(dyL1_, dy_[b * t.oStrideB + n * t.oStrideN + row * t.oStrideS], rows, uint32_t(t.valueDim),
                  uint32_t(t.oStrideS));
  }

  // key (token) rows [j, j + cols) of batch b, kv head n into L1: k and v.
  __aicore__ inline void LoadKeyRows(int64_t b, int64_t n, int64_t j, uint32_t cols, LocalTensor<T>& k,
                                     LocalTensor<T>& v) {
    const AttentionTilingData& t = g_->fwd;
    k = mm_.Load(kL1_, k_[b * t.kStrideB + n * t.kStrideN + j * t.kStrideS], cols, uint32_t(t.headDim),
                 uint32_t(t.kStrideS));
    v = mm_.Load(vL1_, v_[b * t.vStrideB + n * t.vStrideN + j * t.vStrideS], cols, uint32_t(t.valueDim),
                 uint32_t(t.vStrideS));
  }

  // dk / dv of keys [j0, j0 + cols) of kv head n over every query head of its group and the S1 blocks
  // whose rows keep them.
  __aicore__ inline void KeyTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t cols = uint32_t(task.rows);
    LocalTensor<T> k, v;
    LoadKeyRows(task.b, task.n, task.kTok0 + task.i0, cols, k, v);
    const int64_t group = t.heads / t.kvHeads, end = (task.n + 1) * group;
    for (int64_t n = task.n * group; n < end; ++n) {
      for (int64_t blk = task.first; blk < task.first + task.count; ++blk) {
        const int64_t i0 = blk * t.s1Block;
        const uint32_t rows = uint32_t(task.s1 - i0 < t.s1Block ? task.s1 - i0 : t.s1Block);
        LocalTensor<T> q, dy;
        LoadQueryRows(task.b, n, task.qTok0 + i0, rows, q, dy);
        Scores(q, dy, k, v, rows, cols);
        qL1_.FreeTensor(q);
        dyL1_.FreeTensor(dy);
        if (n + 1 == end && blk + 1 == task.first + task.count) {  // the task's last Scores: K, V are done
          kL1_.FreeTensor(k);
          vL1_.FreeTensor(v);
        }
        Scored(Pending{true, rows, cols, task.b, n, task.qTok0 + i0});
      }
    }
  }

  // dq of query rows [i0, i0 + rows) of head n over the S2 blocks they keep.
  __aicore__ inline void QueryTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t rows = uint32_t(task.rows);
    const int64_t kvHead = task.n / (t.heads / t.kvHeads);
    LocalTensor<T> q, dy;
    LoadQueryRows(task.b, task.n, task.qTok0 + task.i0, rows, q, dy);
    for (int64_t idx = 0; idx < task.count; ++idx) {
      const int64_t j0 = (task.first + idx) * t.s2Block;
      const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block);
      LocalTensor<T> k, v;
      LoadKeyRows(task.b, kvHead, task.kTok0 + j0, cols, k, v);
      Scores(q, dy, k, v, rows, cols);
      kL1_.FreeTensor(k);
      vL1_.FreeTensor(v);
      if (idx + 1 == task.count) {  // the task's last Scores: Q, dy are done
        qL1_.FreeTensor(q);
        dyL1_.FreeTensor(dy);
      }
      Scored(Pending{false, rows, cols, task.b, kvHead, task.kTok0 + j0});
    }
  }

  const AttentionGradTilingData* g_ = nullptr;
  GlobalTensor<T> q_, k_, v_, dy_;
  AttentionGradWorkspace<T> ws_[kAttentionGradSlots];
  Pending pending_[kAttentionGradSlots];
  int64_t scored_ = 0, parted_ = 0;  // the group's steps so far whose Scores / Parts are out
  int64_t lead_ = 0;
  TPipe pipe_;
  CubeMatmul<T> mm_;
  TQue<TPosition::A1, 1> qL1_, dyL1_, partsL1_;  // partsL1_: P^T and dS^T, or dS
  TQue<TPosition::B1, 1> kL1_, vL1_;
};
