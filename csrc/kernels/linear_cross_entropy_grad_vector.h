// The AIVs' half of the fused linear cross-entropy backward. With x the logits (of score + bias), p = exp(x - lse)
// (lse the forward's, all shards'), w the class weights (1 without) and per token the three scales the wrapper
// derives from the loss's gradient (a for the softmax, b for the target, c for the uniform part of label smoothing;
// all 0 for an ignored token):
//   G = d loss / d score = (a p - c w - b [vocabulary row == target]) * (softcap: 1 - tanh^2)
// in fp32, cast once to the input dtype into the group's G segment slot (rows as the score block's, columns the
// segment's moving rows), flag kGradReady per segment. Token tasks hold a, b, c, lse per row and the block's bias and
// w per column; vocab tasks the reverse, the tokens' values loaded with each block. A vocab task also sums its rows'
// fp32 G over every token: grad_bias, cast and written once at the task's end by the AIV that owns the rows. After
// its first segment's G, a task reads out the previous task's accumulator (kAccReady), cast once into grad_hidden or
// grad_weight, and flags kAccFree; with gradSums a token task adds it to its split's fp32 sums instead, and after
// the last launch's tasks the AIVs add the splits' sums in order and cast them once (CombineSums).
#pragma once
#include "linear_cross_entropy_vector.h"

template <typename T>
class LceGradVector : public LceVectorBase<T> {
  using Base = LceVectorBase<T>;

 public:
  __aicore__ inline void Init(GM_ADDR target, GM_ADDR lse, GM_ADDR gradSoftmax, GM_ADDR gradTarget, GM_ADDR gradUniform,
                              GM_ADDR bias, GM_ADDR classWeight, GM_ADDR gradHidden, GM_ADDR gradWeight,
                              GM_ADDR gradBias, GM_ADDR ws, const LinearCrossEntropyTilingData& t) {
    Base::InitBase(target, bias, classWeight, ws, t);
    scales_[0].SetGlobalBuffer(reinterpret_cast<__gm__ float*>(lse));
    scales_[1].SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gradSoftmax));
    scales_[2].SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gradTarget));
    scales_[3].SetGlobalBuffer(reinterpret_cast<__gm__ float*>(gradUniform));
    gradHidden_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gradHidden));
    gradWeight_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gradWeight));
    gradBias_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gradBias));
    sums_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws + t.partialOffset));
  }

  __aicore__ inline void Process(LceTaskWalk& walk) {
    using namespace lce_flags;
    const LinearCrossEntropyTilingData& t = *this->t_;
    LceTask task, pending;
    bool hasPending = false;
    while (walk.Next(task)) {
      Begin(task);
      const int64_t segments = LceSegments(t, task);
      for (int64_t s = 0; s < segments; ++s) {
        int64_t first, blocks;
        LceSegment(t, task, s, first, blocks);
        for (int64_t b = first; b < first + blocks; ++b) {
          const uint32_t cols = uint32_t(LceBlockRows(task, b));
          if (task.vocabRows && this->rows_ > 0) LoadColumns(b * kLceBlock, cols);
          if (!task.vocabRows && this->rows_ > 0) this->LoadVocabColumns(b * kLceBlock, cols);
          this->LoadScore(cols);
          // the segment's slot is written once the AIC has its G of two segments ago in L1
          if (b == first && segments_ >= kLceGradSlots) CrossCoreWaitFlag<2, PIPE_MTE3>(kGradFree);
          if (this->rows_ > 0) Grad(task, b * kLceBlock, cols, uint32_t((b - first) * kLceBlock));
        }
        CrossCoreSetFlag<2, PIPE_MTE3>(kGradReady);
        ++segments_;
        if (s == 0 && hasPending) Readout(pending), hasPending = false;
      }
      if (task.vocabRows && this->rows_ > 0) WriteBiasGrad(task);
      pending = task, hasPending = true;
    }
    if (hasPending) Readout(pending);
    for (int64_t n = segments_ > kLceGradSlots ? segments_ - kLceGradSlots : 0; n < segments_; ++n)
      CrossCoreWaitFlag<2, PIPE_MTE3>(kGradFree);
    if (t.gradSums > 1 && t.vocabEnd == t.vocab) CombineSums();
  }

 private:
  __aicore__ inline LocalTensor<float> Stat(uint32_t which) {
    return this->statBuf_.template Get<float>()[which * kLceHalf];
  }
  __aicore__ inline LocalTensor<float> Col(uint32_t which) { return Base::Col(which); }

  // Token tasks: this AIV's rows' lse and scales, and their targets sorted. Vocab tasks: the rows' bias and class
  // weights, and their grad_bias sum zeroed.
  __aicore__ inline void Begin(const LceTask& task) {
    using namespace lce_vec;
    this->Place(task);
    if (this->rows_ == 0) return;
    if (task.vocabRows) {
      if (this->t_->hasBias || this->t_->hasClassWeight) {
        SyncPipes<HardEvent::V_MTE2>();  // the last task's steps are done with them
        if (this->t_->hasBias) this->LoadVocab(Stat(kBiasRow), true, task.row0 + this->r0_, this->rows_);
        if (this->t_->hasClassWeight) this->LoadVocab(Stat(kWeightRow), false, task.row0 + this->r0_, this->rows_);
        SyncPipes<HardEvent::MTE2_V>();
      }
      Duplicate(Stat(kBiasGrad), 0.0f, int32_t(kLceHalf));
      return;
    }
    const int64_t row = task.row0 + this->r0_;
    SyncPipes<HardEvent::V_MTE2>();  // the last task's steps are done with them
    const uint32_t pad = (this->rows_ + 7) / 8 * 8 - this->rows_;  // whole 32-byte blocks: Brcb reads groups of 8
    for (uint32_t k = 0; k < 4; ++k)
      DataCopyPad(Stat(kLse + k), scales_[k][row], DataCopyExtParams(1, this->rows_ * 4, 0, 0, 0),
                  DataCopyPadExtParams<float>(pad != 0, 0, uint8_t(pad), 0.0f));
    SyncPipes<HardEvent::MTE2_V>();
    this->SortRowTargets(task.row0);
    // targets before the launch's first row are an earlier launch's
    const int64_t j0 = task.first * kLceBlock;
    while (this->nextHit_ < this->hitCount_ && this->hits_[this->nextHit_].vocabRow < j0) ++this->nextHit_;
  }

  // Vocab tasks: the moving block's tokens' lse, scales and targets, one per column.
  __aicore__ inline void LoadColumns(int64_t j0, uint32_t cols) {
    SyncPipes<HardEvent::V_MTE2>();
    SyncPipes<HardEvent::S_MTE2>();
    const uint32_t pad = (cols + 7) / 8 * 8 - cols, padTarget = (cols + 3) / 4 * 4 - cols;  // whole 32-byte blocks
    for (uint32_t k = 0; k < 4; ++k)
      DataCopyPad(Col(k), scales_[k][j0], DataCopyExtParams(1, cols * 4, 0, 0, 0),
                  DataCopyPadExtParams<float>(pad != 0, 0, uint8_t(pad), 0.0f));
    DataCopyPad(this->targetBuf_.template Get<int64_t>(), this->target_[j0], DataCopyExtParams(1, cols * 8, 0, 0, 0),
                DataCopyPadExtParams<int64_t>(padTarget != 0, 0, uint8_t(padTarget), 0));
    SyncPipes<HardEvent::MTE2_V>();
    SyncPipes<HardEvent::MTE2_S>();
  }

  // G of the score block of moving rows [j0, j0 + cols) into the segment's slot at column segCol.
  __aicore__ inline void Grad(const LceTask& task, int64_t j0, uint32_t cols, uint32_t segCol) {
    using namespace lce_vec;
    using row_ops::Op;
    const uint32_t rows = this->rows_, pp = this->Pitch(cols), n = rows * pp;
    const bool cap = this->t_->softcap > 0.0f;
    const bool weighed = this->t_->hasClassWeight;
    LocalTensor<float> s = this->scoreQue_.template DeQue<float>(), blocks = this->blocksBuf_.template Get<float>();
    // c w, the outer product of a per-row and a per-column vector, goes through the stage before G's cast does
    LocalTensor<float> uniform = this->stageBuf_.template Get<float>();
    if (weighed) SyncPipes<HardEvent::MTE3_V>();  // the last block's G is out of the stage
    if (this->t_->hasBias) {
      if (task.vocabRows) RowScale(Op::kAdd, s, Stat(kBiasRow), blocks, rows, cols, pp);
      else this->ColumnApply(Op::kAdd, s, Col(kBiasCol), cols, pp);
    }
    if (cap) this->Softcap(s, n, true);
    if (!task.vocabRows) {  // rows are tokens: per-row lse and scales
      RowScale(Op::kSub, s, Stat(kLse), blocks, rows, cols, pp);
      Exp(s, s, int32_t(n));
      RowScale(Op::kMul, s, Stat(kSoftmax), blocks, rows, cols, pp);
      if (weighed) {
        RowBlocks(blocks, Stat(kUniform), rows);
        this->Outer(uniform, blocks, Col(kWeightCol), cols, pp);
        Sub(s, s, uniform, int32_t(n));
      } else {
        RowScale(Op::kSub, s, Stat(kUniform), blocks, rows, cols, pp);
      }
      if (this->nextHit_ < this->hitCount_ && this->hits_[this->nextHit_].vocabRow < j0 + cols) {
        LocalTensor<float> b = Stat(kTargetScale);
        SyncPipes<HardEvent::V_S>();
        for (; this->nextHit_ < this->hitCount_ && this->hits_[this->nextHit_].vocabRow < j0 + cols; ++this->nextHit_) {
          const LceHit& hit = this->hits_[this->nextHit_];
          const uint32_t at = hit.row * pp + uint32_t(hit.vocabRow - j0);
          s.SetValue(at, s.GetValue(at) - b.GetValue(hit.row));
        }
        SyncPipes<HardEvent::S_V>();
      }
    } else {  // rows are vocabulary rows, columns tokens: per-column lse and scales
      this->ColumnApply(Op::kSub, s, Col(kLseCol), cols, pp);
      Exp(s, s, int32_t(n));
      this->ColumnApply(Op::kMul, s, Col(kSoftmaxCol), cols, pp);
      if (weighed) {
        RowBlocks(blocks, Stat(kWeightRow), rows);
        this->Outer(uniform, blocks, Col(kUniformCol), cols, pp);
        Sub(s, s, uniform, int32_t(n));
      } else {
        this->ColumnApply(Op::kSub, s, Col(kUniformCol), cols, pp);
      }
      LocalTensor<int64_t> tg = this->targetBuf_.template Get<int64_t>();
      LocalTensor<float> b = Col(kTargetCol);
      const int64_t first = this->t_->vocabStart + task.row0 + this->r0_;
      SyncPipes<HardEvent::V_S>();
      for (uint32_t c = 0; c < cols; ++c) {
        const int64_t r = tg.GetValue(c) - first;
        if (r < 0 || r >= int64_t(rows)) continue;
        const uint32_t at = uint32_t(r) * pp + c;
        s.SetValue(at, s.GetValue(at) - b.GetValue(c));
      }
      SyncPipes<HardEvent::S_V>();
    }
    if (cap) Mul(s, s, this->workBuf_.template Get<float>(), int32_t(n));
    if (task.vocabRows) {  // grad_bias: the rows' fp32 G summed over the tokens
      LocalTensor<float> red = Stat(kRed);
      RowReduce<true>(red, s, this->foldBuf_.template Get<float>(), blocks[kLceHalf * kLceBlockFloats], rows, cols, pp);
      Add(Stat(kBiasGrad), Stat(kBiasGrad), red, int32_t(rows));
    }
    StoreGrad(s, cols, pp, segCol);
    this->scoreQue_.FreeTensor(s);
  }

  // G [rows, cols] (fp32, pitch pp) in the input dtype into the slot of segment segments_.
  __aicore__ inline void StoreGrad(const LocalTensor<float>& g, uint32_t cols, uint32_t pp, uint32_t segCol) {
    const LinearCrossEntropyTilingData& t = *this->t_;
    const uint32_t segPitch = uint32_t(t.segBlocks * kLceBlock), n = this->rows_ * pp, bytes = uint32_t(sizeof(T));
    LocalTensor<T> stage = this->stageBuf_.template Get<T>();
    SyncPipes<HardEvent::MTE3_V>();  // the last block's G is out of the stage
    if constexpr (sizeof(T) == 4) {
      DataCopy(stage.template ReinterpretCast<float>(), g, DataCopyParams(1, uint16_t(n * 4 / 32), 0, 0));
    } else {
      Cast(stage, g, RoundMode::CAST_RINT, n);
    }
    SyncPipes<HardEvent::V_MTE3>();
    const int64_t slot = (segments_ % kLceGradSlots) * (t.gradSlotBytes / int64_t(bytes));
    const uint32_t rowBytes = (cols * bytes + 31) / 32 * 32;
    DataCopyPad(this->gradWs_[slot + int64_t(this->r0_) * segPitch + segCol], stage,
                DataCopyExtParams(uint16_t(this->rows_), cols * bytes, (pp * bytes - rowBytes) / 32,
                                  (segPitch - cols) * bytes, 0));
  }

  // A vocab task's grad_bias rows (this AIV's), cast once and written.
  __aicore__ inline void WriteBiasGrad(const LceTask& task) {
    using namespace lce_vec;
    LocalTensor<T> out = this->biasOutBuf_.template Get<T>();
    SyncPipes<HardEvent::MTE3_V>();  // the last task's are out
    if constexpr (sizeof(T) == 4) {
      DataCopy(out.template ReinterpretCast<float>(), Stat(kBiasGrad),
               DataCopyParams(1, uint16_t(kLceHalf * 4 / 32), 0, 0));
    } else {
      Cast(out, Stat(kBiasGrad), RoundMode::CAST_RINT, this->rows_);
    }
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(gradBias_[task.row0 + this->r0_], out,
                DataCopyExtParams(1, this->rows_ * uint32_t(sizeof(T)), 0, 0, 0));
  }

  // Once the AIC flags it, the task's fp32 accumulator (this AIV's rows) cast once into its output rows, or, where
  // grad_hidden's rows are summed over several launches or splits (gradSums), added to its split's fp32 sums.
  __aicore__ inline void Readout(const LceTask& task) {
    using namespace lce_flags;
    const LinearCrossEntropyTilingData& t = *this->t_;
    uint32_t r0, rows;
    this->Half(task, r0, rows);
    CrossCoreWaitFlag<2, PIPE_MTE2>(kAccReady);
    const uint32_t h = uint32_t(t.hidden), chunk = uint32_t(kLceBlock);
    const int64_t row = task.row0 + r0;
    // the earlier launches' sums of these rows are added in launch order; they stay fp32 but in the last launch
    // of one split, which casts
    const bool summed = !task.vocabRows && t.gradSums > 0, last = t.vocabEnd == t.vocab;
    const bool sumsIn = summed && t.chained, sumsOut = summed && !(last && t.gradSums == 1);
    const GlobalTensor<float> sums = sums_[task.split * t.tokens * t.hidden + row * h];
    const GlobalTensor<T> out = task.vocabRows ? gradWeight_[row * h] : gradHidden_[row * h];
    for (uint32_t h0 = 0; rows > 0 && h0 < h; h0 += chunk) {
      const uint32_t w = h - h0 < chunk ? h - h0 : chunk;
      LocalTensor<float> a = LoadRows(this->acc_[int64_t(r0) * h + h0], rows, w);
      if (sumsIn) AddRows(a, sums[h0], rows, w);
      if (sumsOut) StoreSums(sums[h0], a, rows, w);
      else CastOut(out[h0], a, rows, w);
      this->scoreQue_.FreeTensor(a);
    }
    CrossCoreSetFlag<2, PIPE_MTE2>(kAccFree);
  }

  // After the last launch's tasks (gradSums > 1): each AIV's share of the tokens, up to kLceHalf rows at a time,
  // gets its splits' sums added in split order and cast once into grad_hidden.
  __aicore__ inline void CombineSums() {
    const LinearCrossEntropyTilingData& t = *this->t_;
    SyncPipes<HardEvent::MTE3_MTE2>();
    SyncAll();  // every split's sums are in GM
    const int64_t aivs = int64_t(t.blockDim) * GetTaskRation(), h = t.hidden, plane = t.tokens * h;
    const int64_t per = (t.tokens + aivs - 1) / aivs, begin = GetBlockIdx() * per;
    const int64_t end = begin + per < t.tokens ? begin + per : t.tokens;
    for (int64_t r = begin; r < end; r += kLceHalf) {
      const uint32_t rows = uint32_t(end - r < int64_t(kLceHalf) ? end - r : kLceHalf);
      for (int64_t h0 = 0; h0 < h; h0 += kLceBlock) {
        const uint32_t w = uint32_t(h - h0 < kLceBlock ? h - h0 : kLceBlock);
        LocalTensor<float> a = LoadRows(sums_[r * h + h0], rows, w);
        for (int64_t j = 1; j < t.gradSums; ++j) AddRows(a, sums_[j * plane + r * h + h0], rows, w);
        CastOut(gradHidden_[r * h + h0], a, rows, w);
        this->scoreQue_.FreeTensor(a);
      }
    }
  }

  // fp32 rows [rows, w] of a [., H] GM matrix into a score buffer (pitch Pitch(w)).
  __aicore__ inline LocalTensor<float> LoadRows(const GlobalTensor<float>& from, uint32_t rows, uint32_t w) {
    const uint32_t h = uint32_t(this->t_->hidden), p8 = (w + 7) / 8 * 8, pp = this->Pitch(w);
    LocalTensor<float> a = this->scoreQue_.template AllocTensor<float>();
    DataCopyPad(a, from, DataCopyExtParams(uint16_t(rows), w * 4, (h - w) * 4, (pp - p8) / 8, 0),
                DataCopyPadExtParams<float>(p8 != w, 0, uint8_t(p8 - w), 0.0f));
    this->scoreQue_.EnQue(a);
    return this->scoreQue_.template DeQue<float>();
  }

  // a += the fp32 rows at `from` (through workBuf_).
  __aicore__ inline void AddRows(const LocalTensor<float>& a, const GlobalTensor<float>& from, uint32_t rows,
                                 uint32_t w) {
    const uint32_t h = uint32_t(this->t_->hidden), p8 = (w + 7) / 8 * 8, pp = this->Pitch(w);
    LocalTensor<float> more = this->workBuf_.template Get<float>();
    SyncPipes<HardEvent::V_MTE2>();  // the last addition is done with it
    DataCopyPad(more, from, DataCopyExtParams(uint16_t(rows), w * 4, (h - w) * 4, (pp - p8) / 8, 0),
                DataCopyPadExtParams<float>(p8 != w, 0, uint8_t(p8 - w), 0.0f));
    SyncPipes<HardEvent::MTE2_V>();
    Add(a, a, more, int32_t(rows * pp));
  }

  // fp32 rows [rows, w] (pitch Pitch(w)) out to a [., H] GM matrix.
  __aicore__ inline void StoreSums(const GlobalTensor<float>& to, const LocalTensor<float>& a, uint32_t rows,
                                   uint32_t w) {
    const uint32_t h = uint32_t(this->t_->hidden), pp = this->Pitch(w), rowBytes = (w * 4 + 31) / 32 * 32;
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(to, a, DataCopyExtParams(uint16_t(rows), w * 4, (pp * 4 - rowBytes) / 32, (h - w) * 4, 0));
    SyncPipes<HardEvent::MTE3_MTE2>();  // out before the queue's next load reuses the buffer
  }

  // fp32 rows [rows, w] (pitch Pitch(w)) cast once to T through the stage and out to a [., H] GM matrix.
  __aicore__ inline void CastOut(const GlobalTensor<T>& to, const LocalTensor<float>& a, uint32_t rows, uint32_t w) {
    const uint32_t h = uint32_t(this->t_->hidden), pp = this->Pitch(w), n = rows * pp, bytes = uint32_t(sizeof(T));
    LocalTensor<T> stage = this->stageBuf_.template Get<T>();
    SyncPipes<HardEvent::MTE3_V>();  // the last chunk is out of the stage
    if constexpr (sizeof(T) == 4) {
      DataCopy(stage.template ReinterpretCast<float>(), a, DataCopyParams(1, uint16_t(n * 4 / 32), 0, 0));
    } else {
      Cast(stage, a, RoundMode::CAST_RINT, n);
    }
    SyncPipes<HardEvent::V_MTE3>();
    const uint32_t rowBytes = (w * bytes + 31) / 32 * 32;
    DataCopyPad(to, stage,
                DataCopyExtParams(uint16_t(rows), w * bytes, (pp * bytes - rowBytes) / 32, (h - w) * bytes, 0));
  }

  int64_t segments_ = 0;  // G segments written: segment n went through slot n % kLceGradSlots
  GlobalTensor<float> scales_[4];  // lse, grad_softmax, grad_target, grad_uniform: per token
  GlobalTensor<T> gradHidden_, gradWeight_, gradBias_;
  GlobalTensor<float> sums_;  // gradSums > 0: grad_hidden's fp32 sums [gradSums][T, H] so far
};
