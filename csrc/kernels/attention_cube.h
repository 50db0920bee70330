// The AIC's half of the fused attention forward, through the cube's basic API (attention_matmul.h): per
// task Q [rows, D] stays in L1; per S2 block
//   S = Q K^T: K [cols, D] is B stored transposed, its Nz fractals already L0B's (one LoadData 2D per chunk
//              of D); Fixpipe S (fp32) into the block's workspace slot, flag kSReady;
//   O = P V:   once the AIVs flag kPReady, P [rows, cols] (input dtype, from the workspace) and V [cols, Dv]
//              (B not transposed: LoadData 3Dv2 into L0B, as the Matmul library loads it); Fixpipe O (fp32)
//              into the workspace after the AIVs freed it (kOFree), flag kOReady.
// S of block j + 1 is computed before P V of block j, so the cube runs one block ahead of the vector cores
// (two S slots), and the AIVs work out P of block j + 1 while it computes P V of block j (two P slots).
#pragma once
#include "attention_matmul.h"
#include "attention_task.h"

template <typename T>
class AttentionCube {
 public:
  __aicore__ inline void Init(GM_ADDR q, GM_ADDR k, GM_ADDR v, GM_ADDR ws, const AttentionTilingData& t) {
    t_ = &t;
    q_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(q));
    k_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(k));
    v_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(v));
    ws_ = ws + GetBlockIdx() * t.workspacePerGroup;
    sWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws_));
    pWs_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(ws_ + t.pOffset));
    oWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws_ + t.oOffset));
    const uint32_t d16 = AttentionMatmul<T>::Align16(uint32_t(t.headDim)), s1b = t.s1Block, s2b = t.s2Block,
                   v16 = t.vPitch;
    pipe_.InitBuffer(qL1_, 1, s1b * d16 * sizeof(T));
    pipe_.InitBuffer(kL1_, 1, s2b * d16 * sizeof(T));
    pipe_.InitBuffer(pL1_, 1, s1b * s2b * sizeof(T));
    pipe_.InitBuffer(vL1_, 1, s2b * v16 * sizeof(T));
    const uint32_t qk = t.qkChunk, pv = t.pvChunk;
    mm_.Init(pipe_, Max(s1b * qk, s1b * pv) * sizeof(T), Max(s2b * qk, pv * v16) * sizeof(T),
             s1b * Max(s2b, v16) * sizeof(float));
  }

  __aicore__ inline void Process(AttentionTaskWalk& walk) {
    AttentionTask task;
    while (walk.Next(task)) {
      if (task.count == 0) continue;  // every row fully masked: the AIVs write it without the cube
      Task(task);
    }
  }

 private:
  __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }

  __aicore__ inline void Task(const AttentionTask& task) {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    const int64_t kvHead = task.n / (t.heads / t.kvHeads);  // stacked: task.n is the group's first head
    const uint32_t rows = uint32_t(task.rows);
    // Q [rows, D] -> L1 (Nz), resident for the task; stacked heads: per query row, its group's heads
    const int64_t qOff = task.b * t.qStrideB + task.n * t.qStrideN + (task.qTok0 + task.i0) * t.qStrideS;
    const uint32_t g = uint32_t(t.stackHeads), d = uint32_t(t.headDim);
    LocalTensor<T> q = g > 1 ? mm_.Load(qL1_, q_[qOff], g, d, uint32_t(t.qStrideN), rows / g, uint32_t(t.qStrideS))
                             : mm_.Load(qL1_, q_[qOff], rows, d, uint32_t(t.qStrideS));
    const int64_t kBase = task.b * t.kStrideB + kvHead * t.kStrideN + task.kTok0 * t.kStrideS;
    const int64_t vBase = task.b * t.vStrideB + kvHead * t.vStrideN + task.kTok0 * t.vStrideS;
    for (int64_t idx = 0; idx < task.count; ++idx) {
      ComputeS(q, rows, kBase, task, idx);
      CrossCoreSetFlag<2, PIPE_FIX>(kSReady);
      if (idx > 0) ComputePV(rows, vBase, task, idx - 1);
    }
    ComputePV(rows, vBase, task, task.count - 1);
    CrossCoreWaitFlag<2, PIPE_FIX>(kOFree);  // the last block's P V read: the slot is free for the next task
    qL1_.FreeTensor(q);
  }

  __aicore__ inline void BlockKeys(const AttentionTask& task, int64_t idx, int64_t& j0, uint32_t& cols) const {
    j0 = (task.first + idx) * t_->s2Block;
    cols = uint32_t(task.s2 - j0 < t_->s2Block ? task.s2 - j0 : t_->s2Block);
  }

  __aicore__ inline void ComputeS(const LocalTensor<T>& q, uint32_t rows, int64_t kBase, const AttentionTask& task,
                                  int64_t idx) {
    const AttentionTilingData& t = *t_;
    int64_t j0;
    uint32_t cols;
    BlockKeys(task, idx, j0, cols);
    const uint32_t d = uint32_t(t.headDim);
    LocalTensor<T> k = mm_.Load(kL1_, k_[kBase + j0 * t.kStrideS], cols, d, uint32_t(t.kStrideS));
    LocalTensor<float> s = mm_.ABt(q, rows, k, cols, d, t.qkChunk);
    kL1_.FreeTensor(k);
    mm_.FixOut(sWs_[(idx % 2) * (t.sSlotBytes / int64_t(sizeof(float)))], s, rows, cols, uint32_t(t.s2Block));
  }

  __aicore__ inline void ComputePV(uint32_t rows, int64_t vBase, const AttentionTask& task, int64_t idx) {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    int64_t j0;
    uint32_t cols;
    BlockKeys(task, idx, j0, cols);
    const uint32_t dv = uint32_t(t.valueDim), v16 = uint32_t(t.vPitch);
    const uint32_t pPitch = (cols + 7) / 8 * 8;  // the AIVs' row pitch of P (attention_vector.h)
    LocalTensor<T> v = mm_.Load(vL1_, v_[vBase + j0 * t.vStrideS], cols, dv, uint32_t(t.vStrideS));
    CrossCoreWaitFlag<2, PIPE_MTE2>(kPReady);
    LocalTensor<T> p = mm_.Load(pL1_, pWs_[(idx % 2) * (t.pSlotBytes / int64_t(sizeof(T)))], rows, cols, pPitch);
    if (idx > 0) CrossCoreWaitFlag<2, PIPE_FIX>(kOFree);  // the AIVs have read the previous block's P V
    LocalTensor<float> o = mm_.AB(p, rows, v, cols, dv, v16, t.pvChunk);
    pL1_.FreeTensor(p);
    vL1_.FreeTensor(v);
    mm_.FixOut(oWs_, o, rows, dv, v16);
    CrossCoreSetFlag<2, PIPE_FIX>(kOReady);
  }

  const AttentionTilingData* t_ = nullptr;
  GM_ADDR ws_ = nullptr;
  GlobalTensor<T> q_, k_, v_, pWs_;
  GlobalTensor<float> sWs_, oWs_;
  TPipe pipe_;
  AttentionMatmul<T> mm_;
  TQue<TPosition::A1, 1> qL1_, pL1_;
  TQue<TPosition::B1, 1> kL1_, vL1_;
};
