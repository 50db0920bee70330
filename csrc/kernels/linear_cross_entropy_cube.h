// The AIC's half of the fused linear cross-entropy (forward and backward), through the cube's basic API
// (cube_matmul.h). Per moving block of a task: score = fixed rows x moving rows^T, its H in kChunk-column chunks
// loaded into L1 together and accumulated in L0C; Fixpipe into the group's score slot, flag kScoreReady.
// Forward: two moving blocks at a time into the two L0C tiles, so each chunk of the fixed rows is loaded once for
// both (3 loads per 2 blocks, not 4: the GM -> L1 path is what the cube waits on), deeper L1 queues that keep
// loading while a pair is written out.
// Backward: once the AIVs flag a segment's G (kGradReady), G [rows, segment] goes into L1 and the task's fp32
// accumulator gains G x moving rows, gemmChunk columns of H per L0C tile (Fixpipe atomic-adds from the task's
// second segment on). A segment's product is issued after the next segment's scores, so the AIVs always have a
// score to fold while the cube multiplies; the accumulator is flagged kAccReady after the task's last segment.
#pragma once
#include "cube_matmul.h"
#include "linear_cross_entropy_buffers.h"
#include "linear_cross_entropy_task.h"

template <typename T>
class LceCube {
 public:
  __aicore__ inline void Init(GM_ADDR hidden, GM_ADDR weight, GM_ADDR ws, const LinearCrossEntropyTilingData& t,
                              bool backward) {
    t_ = &t;
    backward_ = backward;
    hidden_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(hidden));
    weight_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(weight));
    GM_ADDR group = ws + GetBlockIdx() * t.workspacePerGroup;
    scoreWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group));
    gradWs_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(group + t.gradOffset));
    acc_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + t.accOffset));
    const LceCubeBuffers b = LceCubeBuffersOf(sizeof(T), uint32_t(t.kChunk), uint32_t(t.segBlocks),
                                              uint32_t(t.gemmChunk), uint32_t(t.gemmK), backward);
    pipe_.InitBuffer(aL1_, uint8_t(b.aBuffers), b.scoreA);
    pipe_.InitBuffer(bL1_, uint8_t(b.bBuffers), b.scoreB);
    if (backward) {
      pipe_.InitBuffer(gradL1_, 1, b.grad);
      pipe_.InitBuffer(movingL1_, 1, b.moving);
    }
    mm_.Init(pipe_, b.l0a, b.l0b, b.l0c, 2);
  }

  __aicore__ inline void Process(LceTaskWalk& walk) {
    using namespace lce_flags;
    LceTask task;
    while (walk.Next(task)) {
      if (!backward_) {
        const int64_t end = task.first + task.Blocks();
        for (int64_t b = task.first; b < end; b += 2) {
          if (b + 1 < end) ScorePair(task, b);
          else Score(task, b);
        }
        continue;
      }
      const int64_t segments = LceSegments(*t_, task);
      for (int64_t s = 0; s < segments; ++s) {
        int64_t first, blocks;
        LceSegment(*t_, task, s, first, blocks);
        for (int64_t b = first; b < first + blocks; ++b) Score(task, b);
        if (pending_) Gemm();
        pending_ = true, pendingTask_ = task, pendingSeg_ = s, pendingLast_ = s + 1 == segments;
      }
    }
    if (pending_) Gemm();
    // the AIVs' last frees: nothing of this launch is left in flight
    for (int64_t n = scores_ > t_->scoreSlots ? scores_ - t_->scoreSlots : 0; n < scores_; ++n)
      CrossCoreWaitFlag<2, PIPE_FIX>(kScoreFree);
    if (tasksDone_ > 0) CrossCoreWaitFlag<2, PIPE_FIX>(kAccFree);
  }

 private:
  __aicore__ inline GlobalTensor<T> Rows(bool vocabRows, int64_t row) const {
    return (vocabRows ? weight_ : hidden_)[row * t_->hidden];
  }

  // Score block b of `task`.
  __aicore__ inline void Score(const LceTask& task, int64_t b) {
    const LinearCrossEntropyTilingData& t = *t_;
    const uint32_t rows = uint32_t(task.rows), cols = uint32_t(LceBlockRows(task, b)), h = uint32_t(t.hidden);
    const GlobalTensor<T> fixed = Rows(task.vocabRows, task.row0), moving = Rows(!task.vocabRows, b * kLceBlock);
    LocalTensor<float> c = mm_.NewC();
    for (uint32_t k0 = 0; k0 < h; k0 += uint32_t(t.kChunk)) {
      const uint32_t kc = h - k0 < uint32_t(t.kChunk) ? h - k0 : uint32_t(t.kChunk);
      LocalTensor<T> a = mm_.Load(aL1_, fixed[k0], rows, kc, h);
      LocalTensor<T> m = mm_.Load(bL1_, moving[k0], cols, kc, h);
      mm_.ABtInto(c, a, rows, m, cols, kc, kc, k0 == 0);
      aL1_.FreeTensor(a);
      bL1_.FreeTensor(m);
    }
    Out(c, rows, cols);
  }

  // Forward: score blocks b and b + 1 of `task`, each chunk of the fixed rows loaded once for both; each block goes
  // out as soon as its last chunk is multiplied.
  __aicore__ inline void ScorePair(const LceTask& task, int64_t b) {
    const LinearCrossEntropyTilingData& t = *t_;
    const uint32_t rows = uint32_t(task.rows), h = uint32_t(t.hidden), kChunk = uint32_t(t.kChunk);
    const uint32_t cols0 = uint32_t(LceBlockRows(task, b)), cols1 = uint32_t(LceBlockRows(task, b + 1));
    const GlobalTensor<T> fixed = Rows(false, task.row0), moving = Rows(true, b * kLceBlock);
    LocalTensor<float> c0 = mm_.NewC(), c1 = mm_.NewC();
    for (uint32_t k0 = 0; k0 < h; k0 += kChunk) {
      const uint32_t kc = h - k0 < kChunk ? h - k0 : kChunk;
      const bool last = k0 + kc >= h;
      LocalTensor<T> a = mm_.Load(aL1_, fixed[k0], rows, kc, h);
      LocalTensor<T> m0 = mm_.Load(bL1_, moving[k0], cols0, kc, h);
      LocalTensor<T> m1 = mm_.Load(bL1_, moving[int64_t(kLceBlock) * h + k0], cols1, kc, h);
      mm_.ABtInto(c0, a, rows, m0, cols0, kc, kc, k0 == 0);
      bL1_.FreeTensor(m0);
      if (last) Out(c0, rows, cols0);
      mm_.ABtInto(c1, a, rows, m1, cols1, kc, kc, k0 == 0);
      bL1_.FreeTensor(m1);
      aL1_.FreeTensor(a);
    }
    Out(c1, rows, cols1);
  }

  // A finished score block into slot scores_ % scoreSlots once the AIVs have loaded its last occupant.
  __aicore__ inline void Out(LocalTensor<float>& c, uint32_t rows, uint32_t cols) {
    using namespace lce_flags;
    const LinearCrossEntropyTilingData& t = *t_;
    if (scores_ >= t.scoreSlots) CrossCoreWaitFlag<2, PIPE_FIX>(kScoreFree);
    const int64_t slot = (scores_ % t.scoreSlots) * (t.scoreSlotBytes / int64_t(sizeof(float)));
    mm_.FixOut(scoreWs_[slot], c, rows, cols, uint32_t(kLceBlock));
    CrossCoreSetFlag<2, PIPE_FIX>(kScoreReady);
    ++scores_;
  }

  // The pending segment's product G x moving rows into the task's accumulator.
  __aicore__ inline void Gemm() {
    using namespace lce_flags;
    const LinearCrossEntropyTilingData& t = *t_;
    const LceTask& task = pendingTask_;
    int64_t first, blocks;
    LceSegment(t, task, pendingSeg_, first, blocks);
    const int64_t row0 = first * kLceBlock, last = first + blocks - 1;
    const uint32_t rows = uint32_t(task.rows), k = uint32_t(last * kLceBlock + LceBlockRows(task, last) - row0);
    const uint32_t pitch = uint32_t(t.segBlocks * kLceBlock), h = uint32_t(t.hidden), hc = uint32_t(t.gemmChunk);
    CrossCoreWaitFlag<2, PIPE_MTE2>(kGradReady);
    const int64_t slot = (segments_ % kLceGradSlots) * (t.gradSlotBytes / int64_t(sizeof(T)));
    LocalTensor<T> g = mm_.Load(gradL1_, gradWs_[slot], rows, k, pitch);
    CrossCoreSetFlag<2, PIPE_MTE2>(kGradFree);
    const bool firstSeg = pendingSeg_ == 0;
    // the task's first product overwrites the accumulator: the AIVs must have read out the last task's
    if (firstSeg && tasksDone_ > 0) CrossCoreWaitFlag<2, PIPE_FIX>(kAccFree);
    const GlobalTensor<T> moving = Rows(!task.vocabRows, row0);
    for (uint32_t h0 = 0; h0 < h; h0 += hc) {
      const uint32_t n = h - h0 < hc ? h - h0 : hc;
      LocalTensor<T> m = mm_.Load(movingL1_, moving[h0], k, n, h);
      LocalTensor<float> c = mm_.NewC();
      mm_.ABInto(c, g, rows, m, k, n, CubeMatmul<T>::Align16(n), uint32_t(t.gemmK), true);
      movingL1_.FreeTensor(m);
      if (!firstSeg) SetAtomicAdd<float>();
      mm_.FixOut(acc_[h0], c, rows, n, h);
      if (!firstSeg) SetAtomicNone();
    }
    gradL1_.FreeTensor(g);
    ++segments_;
    if (pendingLast_) {
      CrossCoreSetFlag<2, PIPE_FIX>(kAccReady);
      ++tasksDone_;
    }
    pending_ = false;
  }

  const LinearCrossEntropyTilingData* t_ = nullptr;
  bool backward_ = false;
  GlobalTensor<T> hidden_, weight_, gradWs_;
  GlobalTensor<float> scoreWs_, acc_;
  int64_t scores_ = 0, segments_ = 0, tasksDone_ = 0;  // the group's score blocks, G segments, finished tasks
  bool pending_ = false, pendingLast_ = false;          // a segment whose product is still to come
  LceTask pendingTask_;
  int64_t pendingSeg_ = 0;
  TPipe pipe_;
  CubeMatmul<T> mm_;
  TQue<TPosition::A1, 1> aL1_, gradL1_;
  TQue<TPosition::B1, 1> bL1_, movingL1_;
};
