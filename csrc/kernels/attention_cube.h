// The AIC's half of the fused attention forward, through the cube's basic API (as
// examples/cube_matmul_example.h): per task Q [rows, D] stays in L1; per S2 block
//   S = Q K^T: K [cols, D] is B stored transposed, its Nz fractals already L0B's (one LoadData 2D per chunk
//              of D); Fixpipe S (fp32) into the block's workspace slot, flag kSReady;
//   O = P V:   once the AIVs flag kPReady, P [rows, cols] (input dtype, from the workspace) and V [cols, Dv]
//              (B not transposed: LoadData 3Dv2 into L0B, as the Matmul library loads it); Fixpipe O (fp32)
//              into the workspace after the AIVs freed it (kOFree), flag kOReady.
// S of block j + 1 is computed before P V of block j, so the cube runs one block ahead of the vector cores
// (two S slots).
#pragma once
#include "attention_task.h"

template <typename T>
class AttentionCube {
  static constexpr uint32_t kC0 = 32 / sizeof(T);            // elements of a fractal row
  static constexpr uint32_t kFractal = 512 / sizeof(T);      // elements of a 16 x C0 fractal
  static constexpr uint32_t kSmallTile = 10;                 // Mmad.md: (m/16)*(n/16) below it needs a barrier

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
    const uint32_t d16 = Align16(uint32_t(t.headDim)), s1b = t.s1Block, s2b = t.s2Block, v16 = t.vPitch;
    pipe_.InitBuffer(qL1_, 1, s1b * d16 * sizeof(T));
    pipe_.InitBuffer(kL1_, 1, s2b * d16 * sizeof(T));
    pipe_.InitBuffer(pL1_, 1, s1b * s2b * sizeof(T));
    pipe_.InitBuffer(vL1_, 1, s2b * v16 * sizeof(T));
    const uint32_t qk = t.qkChunk, pv = t.pvChunk;
    pipe_.InitBuffer(l0a_, 2, Max(s1b * qk, s1b * pv) * sizeof(T));
    pipe_.InitBuffer(l0b_, 2, Max(s2b * qk, pv * v16) * sizeof(T));
    pipe_.InitBuffer(co1_, 1, s1b * Max(s2b, v16) * sizeof(float));
  }

  __aicore__ inline void Process(AttentionTaskWalk& walk) {
    AttentionTask task;
    while (walk.Next(task)) {
      if (task.count == 0) continue;  // every row fully masked: the AIVs write it without the cube
      Task(task);
    }
  }

 private:
  __aicore__ static inline uint32_t Align16(uint32_t x) { return (x + 15) / 16 * 16; }
  __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }
  __aicore__ static inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

  __aicore__ inline void Task(const AttentionTask& task) {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    const int64_t kvHead = task.n / (t.heads / t.kvHeads);
    const uint32_t rows = uint32_t(task.rows);
    // Q [rows, D] -> L1 (Nz), resident for the task
    LocalTensor<T> q = qL1_.AllocTensor<T>();
    const int64_t qOff = task.b * t.qStrideB + task.n * t.qStrideN + (task.qTok0 + task.i0) * t.qStrideS;
    DataCopy(
        q, q_[qOff],
        Nd2NzParams(1, uint16_t(rows), uint16_t(t.headDim), 0, uint16_t(t.qStrideS), uint16_t(Align16(rows)), 1, 0));
    qL1_.EnQue(q);
    q = qL1_.DeQue<T>();
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

  // A [rows, kc] chunk (columns [c, c + kc)) of an Nz L1 tile of m16 rows into L0A (Zz): per row block,
  // its kc / C0 fractals, M1 apart in the Nz tile.
  __aicore__ inline LocalTensor<T> LoadA(const LocalTensor<T>& a1, uint32_t m16, uint32_t c, uint32_t kc) {
    LocalTensor<T> a2 = l0a_.AllocTensor<T>();
    const uint32_t m1 = m16 / 16, kc1 = (kc + kC0 - 1) / kC0;
    for (uint32_t mb = 0; mb < m1; ++mb)
      LoadData(a2[mb * kc1 * kFractal], a1,
               LoadData2DParams(uint16_t((c / kC0) * m1 + mb), uint8_t(kc1), uint16_t(m1), 0, 0, false, 0));
    l0a_.EnQue(a2);
    return l0a_.DeQue<T>();
  }

  // m is the rows' 16-aligned count: with m = 1 the cube reads L0A as a vector (GEMV), not as the Zz
  // fractals loaded here; the padding rows' results are never copied out.
  __aicore__ inline void Mmad(const LocalTensor<float>& c, LocalTensor<T>& a2, LocalTensor<T>& b2, uint32_t m,
                              uint32_t n, uint32_t k, bool first) {
    MmadParams p;
    p.m = uint16_t(m), p.n = uint16_t(n), p.k = uint16_t(k);
    p.cmatrixInitVal = first;
    AscendC::Mmad(c, a2, b2, p);
    if ((m / 16) * (n / 16) < kSmallTile) PipeBarrier<PIPE_M>();  // the next chunk accumulates onto it
    l0a_.FreeTensor(a2);
    l0b_.FreeTensor(b2);
  }

  // C [rows, n] (fp32 in L0C, m16 rows) -> GM at pitch `pitch`.
  __aicore__ inline void FixOut(const GlobalTensor<float>& dst, LocalTensor<float>& c, uint32_t rows, uint32_t n,
                                uint32_t pitch) {
    co1_.EnQue(c);
    c = co1_.DeQue<float>();
    FixpipeParamsV220 p;
    p.nSize = uint16_t(n), p.mSize = uint16_t(rows), p.srcStride = uint16_t(Align16(rows)), p.dstStride = pitch;
    p.quantPre = QuantMode_t::NoQuant;
    Fixpipe<float, float, CFG_ROW_MAJOR>(dst, c, p);
    co1_.FreeTensor(c);
  }

  __aicore__ inline void ComputeS(const LocalTensor<T>& q, uint32_t rows, int64_t kBase, const AttentionTask& task,
                                  int64_t idx) {
    const AttentionTilingData& t = *t_;
    int64_t j0;
    uint32_t cols;
    BlockKeys(task, idx, j0, cols);
    const uint32_t d = uint32_t(t.headDim), m16 = Align16(rows), n16 = Align16(cols);
    LocalTensor<T> k = kL1_.AllocTensor<T>();
    DataCopy(k, k_[kBase + j0 * t.kStrideS],
             Nd2NzParams(1, uint16_t(cols), uint16_t(d), 0, uint16_t(t.kStrideS), uint16_t(n16), 1, 0));
    kL1_.EnQue(k);
    k = kL1_.DeQue<T>();
    LocalTensor<float> s = co1_.AllocTensor<float>();
    for (uint32_t c = 0; c < d; c += t.qkChunk) {
      const uint32_t kc = Min(t.qkChunk, d - c), kc1 = (kc + kC0 - 1) / kC0;
      LocalTensor<T> a2 = LoadA(q, m16, c, kc);
      // K's Nz fractal (key block nb, column block kb) is kb * N1 + nb: the chunk's are contiguous, already Zn
      LocalTensor<T> b2 = l0b_.AllocTensor<T>();
      LoadData(b2, k, LoadData2DParams(uint16_t((c / kC0) * (n16 / 16)), uint8_t(kc1 * (n16 / 16)), 1, 0, 0, false, 0));
      l0b_.EnQue(b2);
      b2 = l0b_.DeQue<T>();
      Mmad(s, a2, b2, m16, cols, kc, c == 0);
    }
    kL1_.FreeTensor(k);
    FixOut(sWs_[(idx % 2) * (t.sSlotBytes / int64_t(sizeof(float)))], s, rows, cols, uint32_t(t.s2Block));
  }

  __aicore__ inline void ComputePV(uint32_t rows, int64_t vBase, const AttentionTask& task, int64_t idx) {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    int64_t j0;
    uint32_t cols;
    BlockKeys(task, idx, j0, cols);
    const uint32_t dv = uint32_t(t.valueDim), v16 = uint32_t(t.vPitch), m16 = Align16(rows), k16 = Align16(cols);
    const uint32_t pPitch = (cols + 7) / 8 * 8;  // the AIVs' row pitch of P (attention_vector.h)
    LocalTensor<T> v = vL1_.AllocTensor<T>();
    DataCopy(v, v_[vBase + j0 * t.vStrideS],
             Nd2NzParams(1, uint16_t(cols), uint16_t(dv), 0, uint16_t(t.vStrideS), uint16_t(k16), 1, 0));
    vL1_.EnQue(v);
    v = vL1_.DeQue<T>();
    CrossCoreWaitFlag<2, PIPE_MTE2>(kPReady);
    LocalTensor<T> p = pL1_.AllocTensor<T>();
    DataCopy(p, pWs_, Nd2NzParams(1, uint16_t(rows), uint16_t(cols), 0, uint16_t(pPitch), uint16_t(m16), 1, 0));
    pL1_.EnQue(p);
    p = pL1_.DeQue<T>();
    if (idx > 0) CrossCoreWaitFlag<2, PIPE_FIX>(kOFree);  // the AIVs have read the previous block's P V
    LocalTensor<float> o = co1_.AllocTensor<float>();
    for (uint32_t c = 0; c < cols; c += t.pvChunk) {
      const uint32_t kc = Min(t.pvChunk, cols - c);
      LocalTensor<T> a2 = LoadA(p, m16, c, kc);
      LocalTensor<T> b2 = l0b_.AllocTensor<T>();
      LoadData3DParamsV2<T> lp;  // V [cols, Dv] as a feature map of k16 pixels x v16 channels
      lp.l1H = 1, lp.l1W = uint16_t(k16), lp.channelSize = uint16_t(v16);
      lp.kExtension = uint16_t(v16), lp.mExtension = uint16_t(Align16(kc)), lp.mStartPt = uint16_t(c);
      lp.kStartPt = 0, lp.fMatrixCtrl = true;
      LoadData(b2, v, lp);
      l0b_.EnQue(b2);
      b2 = l0b_.DeQue<T>();
      Mmad(o, a2, b2, m16, dv, kc, c == 0);
    }
    pL1_.FreeTensor(p);
    vL1_.FreeTensor(v);
    FixOut(oWs_, o, rows, dv, v16);
    CrossCoreSetFlag<2, PIPE_FIX>(kOReady);
  }

  const AttentionTilingData* t_ = nullptr;
  GM_ADDR ws_ = nullptr;
  GlobalTensor<T> q_, k_, v_, pWs_;
  GlobalTensor<float> sWs_, oWs_;
  TPipe pipe_;
  TQue<TPosition::A1, 1> qL1_, pL1_;
  TQue<TPosition::B1, 1> kL1_, vL1_;
  TQue<TPosition::A2, 2> l0a_;
  TQue<TPosition::B2, 2> l0b_;
  TQue<TPosition::CO1, 1> co1_;
};
