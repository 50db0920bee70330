// The AIVs' half of the fused linear cross-entropy forward, and what the backward's shares with it. AIV 0 of a
// group takes the first kLceHalf rows of a task's block, AIV 1 the rest. Per score block (fp32 from the AIC's slot,
// this AIV's rows, padded to a 16-column pitch): the bias of its vocabulary rows added (score = h W^T + b), then
// logits = softcap * tanh(score / softcap) when softcap > 0; the
// target's logit picked by the scalar unit for the rows whose target lies in the block (rows sorted by target at
// the task's start, so a block costs no search); the running sum of the logits, each times its class weight when
// there are class weights (label smoothing's); FlashAttention's
// online softmax for the running max m and sum l (m' = max(m, rowmax); l = l exp(m - m') + rowsum exp(x - m')).
// At the task's end the four statistics of its vocabulary split go out per token into the workspace's partials;
// after every task (SyncAll of the AIVs) each AIV combines a range of tokens' partials, split by split in a fixed
// order, into the outputs: m = max m_s, l = sum l_s exp(m_s - m), the target's and the logits' sums added (an
// earlier launch's outputs first when chained). Row-wise steps are one call over all rows (row_ops.h).
#pragma once
#include "kernel_utils.h"
#include "linear_cross_entropy_buffers.h"
#include "linear_cross_entropy_task.h"
#include "row_ops.h"

namespace lce_vec {
constexpr float kNoMax = -1e30f;     // the running max before any block (finite: exp(kNoMax - m) is 0)
}  // namespace lce_vec

// A target inside the task's rows and the shard's vocabulary: its row (this AIV's) and its vocabulary row.
struct LceHit {
  int64_t vocabRow;
  uint32_t row;
};

template <typename T>
class LceVectorBase {
 protected:
  __aicore__ inline void InitBase(GM_ADDR target, GM_ADDR bias, GM_ADDR classWeight, GM_ADDR ws,
                                  const LinearCrossEntropyTilingData& t) {
    t_ = &t;
    sub_ = uint32_t(GetSubBlockIdx());
    target_.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(target));
    if (t.hasBias) bias_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(bias));
    if (t.hasClassWeight) classWeight_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(classWeight));
    GM_ADDR group = ws + (GetBlockIdx() / GetTaskRation()) * t.workspacePerGroup;
    scoreWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group));
    gradWs_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(group + t.gradOffset));
    acc_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + t.accOffset));
    const LceVectorBuffers b = LceVectorBuffersOf();  // the plan the tiling counted, in its order
    pipe_.InitBuffer(scoreQue_, 2, b.score);
    pipe_.InitBuffer(workBuf_, b.work);
    pipe_.InitBuffer(stageBuf_, b.stage);
    pipe_.InitBuffer(foldBuf_, b.fold);
    pipe_.InitBuffer(statBuf_, b.stats);
    pipe_.InitBuffer(blocksBuf_, b.blocks);
    pipe_.InitBuffer(columnBuf_, b.columns);
    pipe_.InitBuffer(targetBuf_, b.targets);
    pipe_.InitBuffer(vocabInBuf_, b.vocabIn);
    pipe_.InitBuffer(biasOutBuf_, b.biasOut);
    // every lane defined: the row reductions read whole groups of 8 rows, and a tail block's rows leave a gap
    // between 8 and 16 columns that the elementwise steps read
    for (int k = 0; k < 2; ++k) {
      LocalTensor<float> s = scoreQue_.AllocTensor<float>();
      Duplicate(s, 0.0f, int32_t(b.score / 4));
      scoreQue_.FreeTensor(s);
    }
    Duplicate(workBuf_.Get<float>(), 0.0f, int32_t(b.work / 4));
    Duplicate(statBuf_.Get<float>(), 0.0f, int32_t(b.stats / 4));
    Duplicate(blocksBuf_.Get<float>(), 0.0f, int32_t(b.blocks / 4));
    Duplicate(stageBuf_.Get<float>(), 0.0f, int32_t(b.stage / 4));  // Sub reads the class products' gap columns
  }

  __aicore__ inline LocalTensor<float> Col(uint32_t which) {
    return columnBuf_.Get<float>()[which * uint32_t(kLceBlock)];
  }

  // n values of vocabulary rows [first, first + n) of the shard into dst (fp32, zero up to a whole 8: Brcb reads
  // groups of 8): the bias (widened from the input dtype) or the class weights. The caller orders this load after
  // the last vector use of dst and the vector unit after it (V_MTE2, MTE2_V).
  __aicore__ inline void LoadVocab(const LocalTensor<float>& dst, bool bias, int64_t first, uint32_t n) {
    const uint32_t pad = (n + 7) / 8 * 8 - n;
    if (!bias) {
      DataCopyPad(dst, classWeight_[first], DataCopyExtParams(1, n * 4, 0, 0, 0),
                  DataCopyPadExtParams<float>(pad != 0, 0, uint8_t(pad), 0.0f));
    } else if constexpr (sizeof(T) == sizeof(float)) {
      DataCopyPad(dst.template ReinterpretCast<T>(), bias_[first], DataCopyExtParams(1, n * 4, 0, 0, 0),
                  DataCopyPadExtParams<T>(pad != 0, 0, uint8_t(pad), 0.0f));
    } else {
      LocalTensor<T> in = vocabInBuf_.Get<T>();
      DataCopyPad(in, bias_[first], DataCopyExtParams(1, n * uint32_t(sizeof(T)), 0, 0, 0), DataCopyPadExtParams<T>());
      SyncPipes<HardEvent::MTE2_V>();
      Duplicate(dst, 0.0f, int32_t(n + pad));
      Cast(dst, in, RoundMode::CAST_NONE, n);
    }
  }

  // Token tasks: the bias and class weights of the block's vocabulary rows [j0, j0 + cols), one per column.
  __aicore__ inline void LoadVocabColumns(int64_t j0, uint32_t cols) {
    if (!t_->hasBias && !t_->hasClassWeight) return;
    SyncPipes<HardEvent::V_MTE2>();  // the last block's steps are done with them
    if (t_->hasBias) LoadVocab(Col(lce_vec::kBiasCol), true, j0, cols);
    if (t_->hasClassWeight) LoadVocab(Col(lce_vec::kWeightCol), false, j0, cols);
    SyncPipes<HardEvent::MTE2_V>();
  }

  // x[r, 0:cols) = x op v[0:cols) for every row of this AIV: the column values read with repeat stride 0.
  __aicore__ inline void ColumnApply(row_ops::Op op, const LocalTensor<float>& x, const LocalTensor<float>& v,
                                     uint32_t cols, uint32_t pitch) {
    ColumnProduct(op, x, x, v, cols, pitch);
  }

  // dst[r, 0:cols) = x[r, 0:cols) op v[0:cols).
  __aicore__ inline void ColumnProduct(row_ops::Op op, const LocalTensor<float>& dst, const LocalTensor<float>& x,
                                       const LocalTensor<float>& v, uint32_t cols, uint32_t pitch) {
    using namespace row_ops;
    const uint8_t rep = uint8_t(pitch / kBlock);
    for (uint32_t c = 0; c < cols; c += kLanes) {
      const uint32_t w = cols - c < kLanes ? cols - c : kLanes;
      Binary(op, dst[c], x[c], v[c], w, rows_, BinaryRepeatParams(1, 1, 1, rep, rep, 0));
    }
  }

  // dst[r, 0:cols) = u[r] v[0:cols) (an outer product), u as per-row 32-byte blocks (RowBlocks).
  __aicore__ inline void Outer(const LocalTensor<float>& dst, const LocalTensor<float>& uBlocks,
                               const LocalTensor<float>& v, uint32_t cols, uint32_t pitch) {
    using namespace row_ops;
    const uint8_t rep = uint8_t(pitch / kBlock);
    for (uint32_t c = 0; c < cols; c += kLanes) {
      const uint32_t w = cols - c < kLanes ? cols - c : kLanes;
      Binary(Op::kMul, dst[c], uBlocks, v[c], w, rows_, BinaryRepeatParams(1, 0, 1, rep, 1, 0));
    }
  }

  // This AIV's rows of `task`: the first r0, and how many.
  __aicore__ inline void Half(const LceTask& task, uint32_t& r0, uint32_t& rows) const {
    const int64_t half = task.rows < int64_t(kLceHalf) ? task.rows : int64_t(kLceHalf);
    r0 = sub_ == 0 ? 0 : uint32_t(half);
    rows = uint32_t(sub_ == 0 ? half : task.rows - half);
  }
  __aicore__ inline void Place(const LceTask& task) { Half(task, r0_, rows_); }

  __aicore__ static inline uint32_t Pitch(uint32_t cols) { return (cols + 15) / 16 * 16; }

  // Once the AIC flags it, the next score block (this AIV's rows, `cols` columns) into scoreQue_; its slot is freed
  // as soon as the copy is issued.
  __aicore__ inline void LoadScore(uint32_t cols) {
    using namespace lce_flags;
    CrossCoreWaitFlag<2, PIPE_MTE2>(kScoreReady);
    if (rows_ > 0) {
      const uint32_t p8 = (cols + 7) / 8 * 8, pp = Pitch(cols);
      LocalTensor<float> s = scoreQue_.AllocTensor<float>();
      const int64_t slot = (scores_ % t_->scoreSlots) * (t_->scoreSlotBytes / int64_t(sizeof(float)));
      DataCopyPad(s, scoreWs_[slot + int64_t(r0_) * kLceBlock],
                  DataCopyExtParams(uint16_t(rows_), cols * 4, (uint32_t(kLceBlock) - cols) * 4, (pp - p8) / 8, 0),
                  DataCopyPadExtParams<float>(p8 != cols, 0, uint8_t(p8 - cols), 0.0f));
      scoreQue_.EnQue(s);
    }
    CrossCoreSetFlag<2, PIPE_MTE2>(kScoreFree);
    ++scores_;
  }

  // s = softcap * tanh(s / softcap); with `derivative`, workBuf_ gets d logits / d score = 1 - tanh^2.
  __aicore__ inline void Softcap(const LocalTensor<float>& s, uint32_t n, bool derivative) {
    SoftcapBlock(s, workBuf_.Get<float>(), n, t_->softcap, derivative);
  }

  // This AIV's rows' targets that fall in the shard, sorted by vocabulary row (insertion sort of at most kLceHalf
  // on the scalar unit, once per task), into hits_.
  __aicore__ inline void SortRowTargets(int64_t row0) {
    hitCount_ = 0, nextHit_ = 0;
    if (rows_ == 0) return;
    LocalTensor<int64_t> tg = targetBuf_.Get<int64_t>();
    SyncPipes<HardEvent::S_MTE2>();
    const uint32_t pad = (rows_ + 3) / 4 * 4 - rows_;  // a whole 32-byte block
    DataCopyPad(tg, target_[row0 + r0_], DataCopyExtParams(1, rows_ * 8, 0, 0, 0),
                DataCopyPadExtParams<int64_t>(pad != 0, 0, uint8_t(pad), 0));
    SyncPipes<HardEvent::MTE2_S>();
    for (uint32_t r = 0; r < rows_; ++r) {
      const int64_t v = tg.GetValue(r) - t_->vocabStart;
      if (v < 0 || v >= t_->vocab) continue;
      uint32_t k = hitCount_++;
      for (; k > 0 && hits_[k - 1].vocabRow > v; --k) hits_[k] = hits_[k - 1];
      hits_[k] = LceHit{v, r};
    }
  }

  const LinearCrossEntropyTilingData* t_ = nullptr;
  uint32_t sub_ = 0, r0_ = 0, rows_ = 0;
  int64_t scores_ = 0;  // score blocks loaded: block n came through slot n % scoreSlots
  LceHit hits_[kLceHalf];
  uint32_t hitCount_ = 0, nextHit_ = 0;
  GlobalTensor<int64_t> target_;
  GlobalTensor<float> scoreWs_, acc_, classWeight_;
  GlobalTensor<T> gradWs_, bias_;
  TPipe pipe_;
  TQue<TPosition::VECIN, 1> scoreQue_;
  TBuf<TPosition::VECCALC> workBuf_, stageBuf_, foldBuf_, statBuf_, blocksBuf_, columnBuf_, targetBuf_, vocabInBuf_,
      biasOutBuf_;
};

template <typename T>
class LceVector : public LceVectorBase<T> {
  using Base = LceVectorBase<T>;

 public:
  __aicore__ inline void Init(GM_ADDR target, GM_ADDR bias, GM_ADDR classWeight, GM_ADDR logitsMax, GM_ADDR sumExp,
                              GM_ADDR targetLogit, GM_ADDR logitSum, GM_ADDR ws,
                              const LinearCrossEntropyTilingData& t) {
    Base::InitBase(target, bias, classWeight, ws, t);
    max_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(logitsMax));
    sum_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(sumExp));
    target_logit_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(targetLogit));
    logit_sum_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(logitSum));
    partial_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws + t.partialOffset));
  }

  __aicore__ inline void Process(LceTaskWalk& walk) {
    LceTask task;
    while (walk.Next(task)) {
      Begin(task);
      for (int64_t b = task.first; b < task.first + task.Blocks(); ++b) {
        const uint32_t cols = uint32_t(LceBlockRows(task, b));
        if (this->rows_ > 0) this->LoadVocabColumns(b * kLceBlock, cols);
        this->LoadScore(cols);
        if (this->rows_ > 0) Fold(b * kLceBlock, cols);
      }
      if (this->rows_ > 0) Finish(task);
    }
    SyncPipes<HardEvent::MTE3_MTE2>();
    SyncAll();  // every task's partials are in GM
    Combine();
  }

 private:
  __aicore__ inline LocalTensor<float> Stat(uint32_t which) {
    return this->statBuf_.template Get<float>()[which * kLceHalf];
  }

  __aicore__ inline void Begin(const LceTask& task) {
    using namespace lce_vec;
    this->Place(task);
    if (this->rows_ == 0) return;
    SyncPipes<HardEvent::MTE3_V>();  // the last task's statistics are out
    Duplicate(Stat(kMax0), kNoMax, int32_t(kLceHalf));
    Duplicate(Stat(kSum), 0.0f, int32_t(kLceHalf));
    Duplicate(Stat(kTarget), 0.0f, int32_t(kLceHalf));
    Duplicate(Stat(kLogitSum), 0.0f, int32_t(kLceHalf));
    cur_ = 0;
    this->SortRowTargets(task.row0);
    // targets before the split's first row are another split's
    const int64_t j0 = task.first * kLceBlock;
    while (this->nextHit_ < this->hitCount_ && this->hits_[this->nextHit_].vocabRow < j0) ++this->nextHit_;
  }

  // The score block of vocabulary rows [j0, j0 + cols) folded into the row statistics.
  __aicore__ inline void Fold(int64_t j0, uint32_t cols) {
    using namespace lce_vec;
    const uint32_t rows = this->rows_, pp = this->Pitch(cols), n = rows * pp;
    LocalTensor<float> s = this->scoreQue_.template DeQue<float>();
    if (this->t_->hasBias) this->ColumnApply(row_ops::Op::kAdd, s, this->Col(kBiasCol), cols, pp);
    if (this->t_->softcap > 0.0f) this->Softcap(s, n, false);
    if (this->nextHit_ < this->hitCount_ && this->hits_[this->nextHit_].vocabRow < j0 + cols) {
      LocalTensor<float> tl = Stat(kTarget);
      SyncPipes<HardEvent::V_S>();
      for (; this->nextHit_ < this->hitCount_ && this->hits_[this->nextHit_].vocabRow < j0 + cols; ++this->nextHit_) {
        const LceHit& hit = this->hits_[this->nextHit_];
        tl.SetValue(hit.row, s.GetValue(hit.row * pp + uint32_t(hit.vocabRow - j0)));
      }
      SyncPipes<HardEvent::S_V>();
    }
    LocalTensor<float> fold = this->foldBuf_.template Get<float>(), blocks = this->blocksBuf_.template Get<float>();
    LocalTensor<float> red8 = blocks[kLceHalf * kLceBlockFloats], red = Stat(kRed), alpha = Stat(kAlpha);
    LocalTensor<float> mOld = Stat(kMax0 + cur_), mNew = Stat(kMax1 - cur_), l = Stat(kSum);
    if (this->t_->hasClassWeight) {  // sum_c w[c] logit[c]: the products in the (otherwise idle) stage
      LocalTensor<float> weighed = this->stageBuf_.template Get<float>();
      this->ColumnProduct(row_ops::Op::kMul, weighed, s, this->Col(kWeightCol), cols, pp);
      RowReduce<true>(red, weighed, fold, red8, rows, cols, pp);
    } else {
      RowReduce<true>(red, s, fold, red8, rows, cols, pp);
    }
    Add(Stat(kLogitSum), Stat(kLogitSum), red, int32_t(rows));
    OnlineSoftmaxBlock(s, mOld, mNew, alpha, l, red, fold, red8, blocks, rows, cols, pp);
    cur_ ^= 1u;
    this->scoreQue_.FreeTensor(s);
  }

  // The task's statistics into its split's partials.
  __aicore__ inline void Finish(const LceTask& task) {
    using namespace lce_vec;
    const int64_t row = task.row0 + this->r0_, tokens = this->t_->tokens;
    const GlobalTensor<float> out = partial_[task.split * kLceStatistics * tokens + row];
    const DataCopyExtParams one(1, this->rows_ * 4, 0, 0, 0);
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(out, Stat(kMax0 + cur_), one);
    DataCopyPad(out[tokens], Stat(kSum), one);
    DataCopyPad(out[2 * tokens], Stat(kTarget), one);
    DataCopyPad(out[3 * tokens], Stat(kLogitSum), one);
  }

  // This AIV's share of the tokens (whole 32-byte blocks of them), kCombineTokens at a time: the partials of every
  // split folded into the outputs. The buffers of the task loop are free by now: workBuf_ holds the running
  // statistics and a rescale, stageBuf_ one source's four.
  __aicore__ inline void Combine() {
    const LinearCrossEntropyTilingData& t = *this->t_;
    const int64_t aivs = int64_t(t.blockDim) * GetTaskRation();
    const int64_t share = (t.tokens + aivs - 1) / aivs, per = (share + 7) / 8 * 8, begin = GetBlockIdx() * per;
    for (int64_t t0 = begin; t0 < begin + per && t0 < t.tokens; t0 += kCombineTokens) {
      const int64_t left = begin + per - t0 < t.tokens - t0 ? begin + per - t0 : t.tokens - t0;
      CombineTokens(t0, uint32_t(left < kCombineTokens ? left : kCombineTokens));
    }
  }

  __aicore__ inline void CombineTokens(int64_t t0, uint32_t n) {
    using namespace lce_vec;
    const LinearCrossEntropyTilingData& t = *this->t_;
    LocalTensor<float> run = this->workBuf_.template Get<float>(), src = this->stageBuf_.template Get<float>();
    LocalTensor<float> m = run, l = run[kCombineTokens], tl = run[2 * kCombineTokens], ls = run[3 * kCombineTokens];
    LocalTensor<float> mNew = run[4 * kCombineTokens], scale = run[5 * kCombineTokens];
    const int32_t lanes = int32_t((n + 7) / 8 * 8);
    const uint32_t pad = uint32_t(lanes) - n;
    SyncPipes<HardEvent::MTE3_V>();  // the last tokens' outputs are out
    Duplicate(m, kNoMax, lanes);
    Duplicate(l, 0.0f, lanes);
    Duplicate(tl, 0.0f, lanes);
    Duplicate(ls, 0.0f, lanes);
    const DataCopyExtParams one(1, n * 4, 0, 0, 0);
    const int64_t sources = t.vocabSplits + (t.chained ? 1 : 0);
    for (int64_t s = 0; s < sources; ++s) {
      const bool earlier = t.chained && s == 0;
      const GlobalTensor<float> part = partial_[(s - (t.chained ? 1 : 0)) * kLceStatistics * t.tokens + t0];
      SyncPipes<HardEvent::V_MTE2>();  // the last source is folded
      for (int64_t k = 0; k < kLceStatistics; ++k) {  // the lanes past n zero: defined, never written out
        const GlobalTensor<float> from = earlier ? Output(k)[t0] : part[k * t.tokens];
        DataCopyPad(src[uint32_t(k) * kCombineTokens], from, one,
                    DataCopyPadExtParams<float>(pad != 0, 0, uint8_t(pad), 0.0f));
      }
      SyncPipes<HardEvent::MTE2_V>();
      LocalTensor<float> ms = src, lsum = src[kCombineTokens];
      // m' = max(m, m_s); l = l exp(m - m') + l_s exp(m_s - m')
      Max(mNew, m, ms, lanes);
      Sub(scale, m, mNew, lanes);
      Sub(ms, ms, mNew, lanes);
      Exp(scale, scale, lanes);
      Exp(ms, ms, lanes);
      Mul(l, l, scale, lanes);
      Mul(lsum, lsum, ms, lanes);
      Add(l, l, lsum, lanes);
      Add(tl, tl, src[2 * kCombineTokens], lanes);
      Add(ls, ls, src[3 * kCombineTokens], lanes);
      Adds(m, mNew, 0.0f, lanes);
    }
    SyncPipes<HardEvent::V_MTE3>();
    for (int64_t k = 0; k < kLceStatistics; ++k) DataCopyPad(Output(k)[t0], run[uint32_t(k) * kCombineTokens], one);
  }

  // The outputs in the partials' order: max, sum-exp, target logit, logit sum.
  __aicore__ inline GlobalTensor<float>& Output(int64_t k) {
    return k == 0 ? max_ : k == 1 ? sum_ : k == 2 ? target_logit_ : logit_sum_;
  }

  static constexpr int64_t kCombineTokens = 1024;  // 6 x 4 KB of workBuf_, 4 x 4 KB of stageBuf_
  uint32_t cur_ = 0;  // which of kMax0 / kMax1 holds the running max
  GlobalTensor<float> max_, sum_, target_logit_, logit_sum_, partial_;
};
