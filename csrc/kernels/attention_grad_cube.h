// The AIC's half of the fused attention backward (attention_grad.cpp). Per step (query rows i, keys j):
//   S = Q_i K_j^T and dP = dy_i V_j^T (fp32) into the group's workspace, flag kSReady;
//   once the AIVs flag kPReady (they recomputed P and formed dS = P * (dP - D)):
//     key tasks:   dv_j part = P^T dy_i and dk_j part = dS^T Q_i (P^T, dS^T from the workspace),
//     query tasks: dq_i part = dS K_j,
//   Fixpipe'd into the result slots once the AIVs have read the previous step's (kRFree), flag kRReady.
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
    ws_.Init(ws + GetBlockIdx() * g.workspacePerGroup, g);
    const uint32_t s1b = t.s1Block, s2b = t.s2Block, dp = g.dPitch, vp = t.vPitch, s1p = g.s1Pitch;
    pipe_.InitBuffer(qL1_, 1, s1b * dp * sizeof(T));
    pipe_.InitBuffer(dyL1_, 1, s1b * vp * sizeof(T));
    pipe_.InitBuffer(kL1_, 1, s2b * dp * sizeof(T));
    pipe_.InitBuffer(vL1_, 1, s2b * vp * sizeof(T));
    pipe_.InitBuffer(pL1_, 1, s2b * s1p * sizeof(T));
    pipe_.InitBuffer(dsL1_, 1, Max(s2b * s1p, s1b * s2b) * sizeof(T));
    const uint32_t qk = t.qkChunk, rc = g.rowChunk, pv = t.pvChunk, big = Max(s1b, s2b);
    mm_.Init(pipe_, Max(big * qk, Max(s2b * rc, s1b * pv)) * sizeof(T), Max(big * qk, Max(rc, pv) * dp) * sizeof(T),
             Max(s1b * s2b, Max(s2b * Max(dp, vp), s1b * dp)) * sizeof(float));
  }

  __aicore__ inline void ProcessKeys(AttentionTaskWalk& walk) {
    AttentionTask task;
    while (walk.Next(task)) {
      if (task.count == 0) continue;  // no query row keeps these keys: the AIVs write zeros
      KeyTask(task);
    }
  }

  __aicore__ inline void ProcessQueries(AttentionTaskWalk& walk) {
    AttentionTask task;
    while (walk.Next(task)) {
      if (task.count == 0) continue;
      QueryTask(task);
    }
  }

 private:
  using Flags = AttentionGradFlags;
  __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }

  // S and dP of a step into the workspace (Q_i / dy_i and K_j / V_j in L1).
  __aicore__ inline void Scores(const LocalTensor<T>& q, const LocalTensor<T>& dy, const LocalTensor<T>& k,
                                const LocalTensor<T>& v, uint32_t rows, uint32_t cols) {
    const AttentionTilingData& t = g_->fwd;
    LocalTensor<float> s = mm_.ABt(q, rows, k, cols, uint32_t(t.headDim), t.qkChunk);
    mm_.FixOut(ws_.s, s, rows, cols, uint32_t(t.s2Block));
    LocalTensor<float> dp = mm_.ABt(dy, rows, v, cols, uint32_t(t.valueDim), t.qkChunk);
    mm_.FixOut(ws_.dp, dp, rows, cols, uint32_t(t.s2Block));
    CrossCoreSetFlag<2, PIPE_FIX>(Flags::kSReady);
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
    const uint32_t cols = uint32_t(task.rows), d = uint32_t(t.headDim), dv = uint32_t(t.valueDim);
    const int64_t j = task.kTok0 + task.i0;
    LocalTensor<T> k, v;
    LoadKeyRows(task.b, task.n, j, cols, k, v);
    const int64_t group = t.heads / t.kvHeads;
    int64_t step = 0;
    for (int64_t n = task.n * group; n < (task.n + 1) * group; ++n) {
      for (int64_t blk = task.first; blk < task.first + task.count; ++blk, ++step) {
        const int64_t i0 = blk * t.s1Block;
        const uint32_t rows = uint32_t(task.s1 - i0 < t.s1Block ? task.s1 - i0 : t.s1Block);
        const int64_t row = task.qTok0 + i0;
        LocalTensor<T> q, dy;
        LoadQueryRows(task.b, n, row, rows, q, dy);
        Scores(q, dy, k, v, rows, cols);
        CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kPReady);
        LocalTensor<T> pt = mm_.Load(pL1_, ws_.p, cols, rows, uint32_t(g_->s1Pitch));
        LocalTensor<T> dst = mm_.Load(dsL1_, ws_.ds, cols, rows, uint32_t(g_->s1Pitch));
        LocalTensor<float> dvPart = mm_.AB(pt, cols, dy, rows, dv, uint32_t(t.vPitch), g_->rowChunk);
        if (step > 0) CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);  // the AIVs have read the last step's
        mm_.FixOut(ws_.r2, dvPart, cols, dv, uint32_t(t.vPitch));
        LocalTensor<float> dkPart = mm_.AB(dst, cols, q, rows, d, uint32_t(g_->dPitch), g_->rowChunk);
        mm_.FixOut(ws_.r1, dkPart, cols, d, uint32_t(g_->dPitch));
        CrossCoreSetFlag<2, PIPE_FIX>(Flags::kRReady);
        pL1_.FreeTensor(pt);
        dsL1_.FreeTensor(dst);
        qL1_.FreeTensor(q);
        dyL1_.FreeTensor(dy);
      }
    }
    CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);  // the slots are free for the next task
    kL1_.FreeTensor(k);
    vL1_.FreeTensor(v);
  }

  // dq of query rows [i0, i0 + rows) of head n over the S2 blocks they keep.
  __aicore__ inline void QueryTask(const AttentionTask& task) {
    const AttentionTilingData& t = g_->fwd;
    const uint32_t rows = uint32_t(task.rows), d = uint32_t(t.headDim);
    const int64_t kvHead = task.n / (t.heads / t.kvHeads), row = task.qTok0 + task.i0;
    LocalTensor<T> q, dy;
    LoadQueryRows(task.b, task.n, row, rows, q, dy);
    for (int64_t idx = 0; idx < task.count; ++idx) {
      const int64_t j0 = (task.first + idx) * t.s2Block, j = task.kTok0 + j0;
      const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block);
      LocalTensor<T> k, v;
      LoadKeyRows(task.b, kvHead, j, cols, k, v);
      Scores(q, dy, k, v, rows, cols);
      CrossCoreWaitFlag<2, PIPE_MTE2>(Flags::kPReady);
      const uint32_t pitch = (cols + 7) / 8 * 8;  // the AIVs' row pitch of dS (attention_grad_vector.h)
      LocalTensor<T> ds = mm_.Load(dsL1_, ws_.ds, rows, cols, pitch);
      LocalTensor<float> dqPart = mm_.AB(ds, rows, k, cols, d, uint32_t(g_->dPitch), t.pvChunk);
      if (idx > 0) CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);
      mm_.FixOut(ws_.r1, dqPart, rows, d, uint32_t(g_->dPitch));
      CrossCoreSetFlag<2, PIPE_FIX>(Flags::kRReady);
      dsL1_.FreeTensor(ds);
      kL1_.FreeTensor(k);
      vL1_.FreeTensor(v);
    }
    CrossCoreWaitFlag<2, PIPE_FIX>(Flags::kRFree);
    qL1_.FreeTensor(q);
    dyL1_.FreeTensor(dy);
  }

  const AttentionGradTilingData* g_ = nullptr;
  GlobalTensor<T> q_, k_, v_, dy_;
  AttentionGradWorkspace<T> ws_;
  TPipe pipe_;
  CubeMatmul<T> mm_;
  TQue<TPosition::A1, 1> qL1_, dyL1_, pL1_, dsL1_;
  TQue<TPosition::B1, 1> kL1_, vL1_;
};
