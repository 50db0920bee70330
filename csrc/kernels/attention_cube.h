// The AIC's half of the fused attention forward, through the cube's basic API (cube_matmul.h): per
// task Q [rows, D] is loaded into L1; per S2 block
//   S = Q K^T: K [cols, D] is B stored transposed, its Nz fractals already L0B's (one LoadData 2D per chunk
//              of D); Fixpipe S (fp32) into the block's workspace slot, flag kSReady;
//   O = P V:   once the AIVs flag kPReady, P [rows, cols] (input dtype, from the workspace) and V [cols, Dv]
//              (B not transposed: LoadData 3Dv2 into L0B, as the Matmul library loads it); Fixpipe O (fp32)
//              into its slot once the AIVs freed it (kOFree), flag kOReady.
// The group's blocks are one stream across its tasks, and S runs kAttentionSLead blocks ahead of P V: the
// AIVs always find the next S ready, the cube never waits for a P it could not yet have, and a task's
// first blocks start while the previous task's last P V are still to come. With two buffers of each L1
// tile and of L0C (the tiling's l1Buffers / l0cBuffers) a block's loads overlap the previous Mmad, and
// its Mmad the previous Fixpipe.
// GQA prefill (groupHeads > 1): a bundle's tasks share their rows and so their S2 blocks, and the first
// kvCacheBlocks K and V tiles of its first task stay in L1 (kvCache_) for the other heads' tasks.
#pragma once
#include "cube_matmul.h"
#include "attention_task.h"
#include "kernel_utils.h"

// A fixed L1 tile that CubeMatmul::Load fills as it fills a queue's buffer, with the hand-overs EnQue / DeQue
// would make: the copy waits for the cube's last reads of the tile (MTE1), its readers for the copy (MTE2).
template <typename T>
struct AttentionL1Tile {
  LocalTensor<T> tile;
  template <typename U>
  __aicore__ inline LocalTensor<U> AllocTensor() {
    SyncPipes<HardEvent::MTE1_MTE2>();
    return tile;
  }
  __aicore__ inline void EnQue(const LocalTensor<T>&) {}
  template <typename U>
  __aicore__ inline LocalTensor<U> DeQue() {
    SyncPipes<HardEvent::MTE2_MTE1>();
    return tile;
  }
};

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
    const uint32_t d16 = CubeMatmul<T>::Align16(uint32_t(t.headDim)), s1b = t.s1Block, s2b = t.s2Block, v16 = t.vPitch;
    const uint8_t n = uint8_t(t.l1Buffers);
    pipe_.InitBuffer(qL1_, n, s1b * d16 * sizeof(T));
    if (t.kvStream) pipe_.InitBuffer(kL1_, n, s2b * d16 * sizeof(T));
    pipe_.InitBuffer(pL1_, n, s1b * s2b * sizeof(T));
    if (t.kvStream) pipe_.InitBuffer(vL1_, n, s2b * v16 * sizeof(T));
    if (t.kvCacheBlocks > 0) pipe_.InitBuffer(kvCache_, uint32_t(t.kvCacheBlocks) * s2b * (d16 + v16) * sizeof(T));
    kTile_ = s2b * d16, vTile_ = s2b * v16;
    const uint32_t qk = t.qkChunk, pv = t.pvChunk;
    mm_.Init(pipe_, Max(s1b * qk, s1b * pv) * sizeof(T), Max(s2b * qk, pv * v16) * sizeof(T),
             s1b * Max(s2b, v16) * sizeof(float), uint32_t(t.l0cBuffers));
  }

  template <class Walk>
  __aicore__ inline void Process(Walk& walk) {
    using namespace attention_flags;
    AttentionTask task;
    while (walk.Next(task)) {
      if (task.count == 0) continue;  // every row fully masked: the AIVs write it without the cube
      Task(task, Leads(walk));
    }
    while (pvDone_ < sDone_) ComputePV();
    // the AIVs' last frees: every slot read, nothing of this launch is left in flight
    for (int64_t n = sDone_ > kAttentionOSlots ? sDone_ - kAttentionOSlots : 0; n < sDone_; ++n)
      CrossCoreWaitFlag<2, PIPE_FIX>(kOFree);
  }

 private:
  // A block whose S is out and whose P V is still to come.
  struct Pending {
    uint32_t rows, cols;
    int64_t v;          // V's first element in GM
    int32_t cacheSlot;  // its tile in kvCache_, or -1: streamed
    bool load;          // the cached tile is brought in with this block
  };

  __aicore__ static inline bool Leads(const AttentionTaskWalk&) { return true; }
  __aicore__ static inline bool Leads(const AttentionGroupWalk& walk) { return walk.Lead(); }

  // K's (or V's) tile `slot` of the cache; `load`: the block's, from src, replacing the previous bundle's.
  __aicore__ inline LocalTensor<T> Cached(bool value, int32_t slot, bool load, const GlobalTensor<T>& src,
                                          uint32_t cols, uint32_t dim, uint32_t pitch) {
    AttentionL1Tile<T> at{
        kvCache_.Get<T>()[(value ? t_->kvCacheBlocks * kTile_ : 0) + slot * (value ? vTile_ : kTile_)]};
    return load ? mm_.Load(at, src, cols, dim, pitch) : at.tile;
  }

  __aicore__ static inline uint32_t Max(uint32_t a, uint32_t b) { return a > b ? a : b; }

  // `lead`: the task brings its bundle's K / V tiles into the cache (always, without bundles).
  __aicore__ inline void Task(const AttentionTask& task, bool lead) {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    const int64_t kvHead = task.n / (t.heads / t.kvHeads);  // stacked: task.n is the group's first head
    const uint32_t rows = uint32_t(task.rows);
    // Q [rows, D] -> L1 (Nz) for the task's S blocks; stacked heads: per query row, its group's heads
    const int64_t qOff = task.b * t.qStrideB + task.n * t.qStrideN + (task.qTok0 + task.i0) * t.qStrideS;
    const uint32_t g = uint32_t(t.stackHeads), d = uint32_t(t.headDim);
    LocalTensor<T> q = g > 1 ? mm_.Load(qL1_, q_[qOff], g, d, uint32_t(t.qStrideN), rows / g, uint32_t(t.qStrideS))
                             : mm_.Load(qL1_, q_[qOff], rows, d, uint32_t(t.qStrideS));
    const int64_t kBase = task.b * t.kStrideB + kvHead * t.kStrideN + task.kTok0 * t.kStrideS;
    const int64_t vBase = task.b * t.vStrideB + kvHead * t.vStrideN + task.kTok0 * t.vStrideS;
    for (int64_t idx = 0; idx < task.count; ++idx) {
      const int64_t j0 = (task.first + idx) * t.s2Block;
      const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block);
      const int32_t slot = idx < t.kvCacheBlocks ? int32_t(idx) : -1;
      ComputeS(q, rows, k_[kBase + j0 * t.kStrideS], cols, slot, lead);
      pending_[sDone_ % kAttentionSSlots] = Pending{rows, cols, vBase + j0 * t.vStrideS, slot, lead};
      ++sDone_;
      if (sDone_ - pvDone_ > kAttentionSLead) ComputePV();
    }
    qL1_.FreeTensor(q);
  }

  // S of the stream's next block into S slot sDone_ % kAttentionSSlots, flag kSReady. The slot's previous
  // S (block sDone_ - kAttentionSSlots) is read: its P V, computed before this, waited for its P.
  __aicore__ inline void ComputeS(const LocalTensor<T>& q, uint32_t rows, const GlobalTensor<T>& k, uint32_t cols,
                                  int32_t cacheSlot, bool load) {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    const uint32_t d = uint32_t(t.headDim);
    LocalTensor<T> kl = cacheSlot >= 0 ? Cached(false, cacheSlot, load, k, cols, d, uint32_t(t.kStrideS))
                                       : mm_.Load(kL1_, k, cols, d, uint32_t(t.kStrideS));
    LocalTensor<float> s = mm_.ABt(q, rows, kl, cols, d, t.qkChunk);
    if (cacheSlot < 0) kL1_.FreeTensor(kl);
    const int64_t slot = (sDone_ % kAttentionSSlots) * (t.sSlotBytes / int64_t(sizeof(float)));
    mm_.FixOut(sWs_[slot], s, rows, cols, uint32_t(t.s2Block));
    CrossCoreSetFlag<2, PIPE_FIX>(kSReady);
  }

  // P V of the stream's oldest block without it (its P in slot pvDone_ % kAttentionPSlots) into P V slot
  // pvDone_ % kAttentionOSlots, flag kOReady.
  __aicore__ inline void ComputePV() {
    using namespace attention_flags;
    const AttentionTilingData& t = *t_;
    const Pending& b = pending_[pvDone_ % kAttentionSSlots];
    const uint32_t dv = uint32_t(t.valueDim), v16 = uint32_t(t.vPitch);
    const uint32_t pPitch = (b.cols + 7) / 8 * 8;  // the AIVs' row pitch of P (attention_vector.h)
    const int64_t pSlot = pvDone_ % kAttentionPSlots, oSlot = pvDone_ % kAttentionOSlots;
    LocalTensor<T> v = b.cacheSlot >= 0 ? Cached(true, b.cacheSlot, b.load, v_[b.v], b.cols, dv, uint32_t(t.vStrideS))
                                        : mm_.Load(vL1_, v_[b.v], b.cols, dv, uint32_t(t.vStrideS));
    CrossCoreWaitFlag<2, PIPE_MTE2>(kPReady);
    LocalTensor<T> p = mm_.Load(pL1_, pWs_[pSlot * (t.pSlotBytes / int64_t(sizeof(T)))], b.rows, b.cols, pPitch);
    LocalTensor<float> o = mm_.AB(p, b.rows, v, b.cols, dv, v16, t.pvChunk);
    pL1_.FreeTensor(p);
    if (b.cacheSlot < 0) vL1_.FreeTensor(v);
    // the slot's previous P V (block pvDone_ - kAttentionOSlots) is read once the AIVs flag it
    if (pvDone_ >= kAttentionOSlots) CrossCoreWaitFlag<2, PIPE_FIX>(kOFree);
    mm_.FixOut(oWs_[oSlot * (t.oSlotBytes / int64_t(sizeof(float)))], o, b.rows, dv, v16);
    CrossCoreSetFlag<2, PIPE_FIX>(kOReady);
    ++pvDone_;
  }

  const AttentionTilingData* t_ = nullptr;
  GM_ADDR ws_ = nullptr;
  GlobalTensor<T> q_, k_, v_, pWs_;
  GlobalTensor<float> sWs_, oWs_;
  Pending pending_[kAttentionSSlots];
  int64_t sDone_ = 0, pvDone_ = 0;  // the group's blocks so far whose S / P V is out
  TPipe pipe_;
  CubeMatmul<T> mm_;
  TQue<TPosition::A1, 1> qL1_, pL1_;
  TQue<TPosition::B1, 1> kL1_, vL1_;
  TBuf<TPosition::B1> kvCache_;  // kvCacheBlocks K tiles of s2Block x D16, then as many V tiles of s2Block x vPitch
  uint32_t kTile_ = 0, vTile_ = 0;
};
