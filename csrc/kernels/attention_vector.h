// The AIVs' half of the fused attention forward: AIV 0 of a group takes the first ceil(rows / 2) rows of
// the task's S1 block, AIV 1 the rest. Per S2 block (FlashAttention-2's online softmax, fp32 throughout):
//   S (fp32 from the AIC's workspace slot) * scale; the mask as a bound Min'd into S: kMasked where masked
//   (atten_mask's True, or outside the band: sparse modes 2-4), so exp(kMasked - max) is 0 in any row that
//   keeps a key; m' = max(m, rowmax S); alpha = exp(m - m'); P = exp(S - m'); l = l alpha + rowsum P;
//   P in the input dtype to the workspace, flag kPReady; once the AIC flags kOReady, O = O alpha + P V,
//   flag kOFree.
// At the end O / l once, written in the input dtype, and m, l as softmax_max / softmax_sum (8 lanes each).
// A row that keeps no key at all (its max stays kMasked) gets out = 0, softmax_max = -FLT_MAX and
// softmax_sum = FLT_MAX, as CANN writes such rows.
#pragma once
#include "attention_mask.h"
#include "attention_task.h"
#include "kernel_utils.h"

namespace attention_vec {
using attention_mask::kMasked;
constexpr uint32_t kMaxRows = 64;  // rows of one AIV: s1Block <= 128
constexpr float kFltMax = 3.40282347e38f;
}  // namespace attention_vec

template <typename T>
class AttentionVector {
  static constexpr uint32_t kTPerBlock = 32 / sizeof(T);

 public:
  __aicore__ inline void Init(GM_ADDR mask, GM_ADDR out, GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR ws,
                              const AttentionTilingData& t) {
    t_ = &t;
    sub_ = uint32_t(GetSubBlockIdx());
    GM_ADDR group = ws + (GetBlockIdx() / GetTaskRation()) * t.workspacePerGroup;
    sWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group));
    pWs_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(group + t.pOffset));
    oWs_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + t.oOffset));
    if (t.maskFull) mask_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(mask));
    out_.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(out));
    max_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(softmaxMax));
    sum_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(softmaxSum));
    const uint32_t rows = (uint32_t(t.s1Block) + 1) / 2, s2b = t.s2Block, vp = t.vPitch;
    maxRows_ = rows;
    pipe_.InitBuffer(sBuf_, rows * s2b * sizeof(float));
    pipe_.InitBuffer(boundBuf_, rows * s2b * sizeof(float));
    if (t.maskFull) {
      pipe_.InitBuffer(maskBuf_, rows * s2b);
      pipe_.InitBuffer(maskHalfBuf_, rows * s2b * sizeof(half));
    }
    pipe_.InitBuffer(oBuf_, rows * vp * sizeof(float));
    pipe_.InitBuffer(rampBuf_, s2b * sizeof(float));
    pipe_.InitBuffer(rowABuf_, s2b * sizeof(float));
    pipe_.InitBuffer(rowBBuf_, s2b * sizeof(float));
    pipe_.InitBuffer(rowVBuf_, vp * sizeof(float));
    pipe_.InitBuffer(statBuf_, 3 * attention_vec::kMaxRows * sizeof(float));  // m, m', alpha
    pipe_.InitBuffer(outStatBuf_, 2 * rows * kAttentionStatLanes * sizeof(float));
    pipe_.InitBuffer(redBuf_, 64);
    LocalTensor<float> ramp = rampBuf_.Get<float>();
    for (uint32_t c = 0; c < s2b; ++c) ramp.SetValue(c, float(c));
    LocalTensor<float> stat = statBuf_.Get<float>();
    Duplicate(stat, 0.0f, int32_t(3 * attention_vec::kMaxRows));  // lanes past the rows stay defined
  }

  __aicore__ inline void Process(AttentionTaskWalk& walk) {
    AttentionTask task;
    while (walk.Next(task)) Task(task);
  }

 private:
  __aicore__ inline void Task(const AttentionTask& task) {
    using namespace attention_flags;
    using namespace attention_vec;
    const int64_t half = (task.rows + 1) / 2;
    r0_ = sub_ == 0 ? 0 : uint32_t(half);
    rows_ = uint32_t(sub_ == 0 ? half : task.rows - half);
    SyncPipes<HardEvent::MTE3_V>();  // the previous task's out and stats copies have read their buffers
    for (uint32_t r = 0; r < rows_; ++r) mRun_[r] = kMasked, lRun_[r] = 0.0f;
    if (rows_ > 0) Duplicate(oBuf_.Get<float>(), 0.0f, int32_t(rows_ * t_->vPitch));
    for (int64_t idx = 0; idx < task.count; ++idx) {
      CrossCoreWaitFlag<2, PIPE_MTE2>(kSReady);
      if (rows_ > 0) Softmax(task, idx);
      CrossCoreSetFlag<2, PIPE_MTE3>(kPReady);
      CrossCoreWaitFlag<2, PIPE_MTE2>(kOReady);
      if (rows_ > 0) Accumulate();
      CrossCoreSetFlag<2, PIPE_MTE2>(kOFree);
    }
    if (rows_ > 0) Finish(task);
  }

  // S block idx -> P (workspace) and the running statistics; leaves alpha in statBuf_.
  __aicore__ inline void Softmax(const AttentionTask& task, int64_t idx) {
    using namespace attention_vec;
    const AttentionTilingData& t = *t_;
    const int64_t j0 = (task.first + idx) * t.s2Block;
    const uint32_t cols = uint32_t(task.s2 - j0 < t.s2Block ? task.s2 - j0 : t.s2Block);
    const uint32_t pp = (cols + 7) / 8 * 8, n = rows_ * pp;
    LocalTensor<float> s = sBuf_.Get<float>(), bound = boundBuf_.Get<float>();
    SyncPipes<HardEvent::V_MTE2>();  // V is done with S (the previous block's O chunks)
    const int64_t slot = (idx % 2) * (t.sSlotBytes / int64_t(sizeof(float)));
    DataCopyPad(s, sWs_[slot + int64_t(r0_) * t.s2Block],
                DataCopyExtParams(uint16_t(rows_), cols * 4, (uint32_t(t.s2Block) - cols) * 4, 0, 0),
                DataCopyPadExtParams<float>(pp != cols, 0, uint8_t(pp - cols), kMasked));
    uint32_t mp = 0;
    if (t.maskFull)
      mp = AttentionLoadMask(maskBuf_.Get<uint8_t>(), mask_, t, task.b, task.n, task.i0 + r0_, j0, rows_, cols);
    SyncPipes<HardEvent::MTE2_V>();
    SyncPipes<HardEvent::MTE3_V>();  // the previous block's P copy has read the bound buffer
    Muls(s, s, t.scale, int32_t(n));
    if (t.maskFull) AttentionApplyMask(s, bound, maskBuf_.Get<uint8_t>(), maskHalfBuf_.Get<half>(), rows_, pp, mp);
    if (t.band)
      AttentionApplyBand(s, rampBuf_.Get<float>(), rowABuf_.Get<float>(), rowBBuf_.Get<float>(), t, task.i0 + r0_,
                         rows_, task.s1, task.s2, j0, cols, pp);
    // row maxima and the new running max
    LocalTensor<float> stat = statBuf_.Get<float>(), red = redBuf_.Get<float>();
    LocalTensor<float> mOld = stat, mNew = stat[kMaxRows], alpha = stat[2 * kMaxRows];
    for (uint32_t r = 0; r < rows_; ++r) {
      ReduceMax(red, s[r * pp], red[8], int32_t(pp));
      const float mx = red.GetValue(0), m = mRun_[r];
      const float m2 = mx > m ? mx : m;
      mOld.SetValue(r, m), mNew.SetValue(r, m2);
      mRun_[r] = m2;
      Adds(s[r * pp], s[r * pp], -m2, int32_t(pp));
    }
    Exp(s, s, int32_t(n));
    Sub(alpha, mOld, mNew, int32_t(kMaxRows));
    Exp(alpha, alpha, int32_t(kMaxRows));
    for (uint32_t r = 0; r < rows_; ++r) {
      ReduceSum(red, s[r * pp], red[8], int32_t(pp));
      lRun_[r] = lRun_[r] * alpha.GetValue(r) + red.GetValue(0);
    }
    // P in the input dtype -> the workspace, this AIV's rows after the other's
    if constexpr (sizeof(T) == 4) {
      DataCopy(bound, s, DataCopyParams(1, uint16_t(n * 4 / 32), 0, 0));
    } else {
      Cast(bound.ReinterpretCast<T>(), s, RoundMode::CAST_RINT, n);
    }
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(pWs_[int64_t(r0_) * pp], bound.ReinterpretCast<T>(), DataCopyExtParams(1, n * sizeof(T), 0, 0, 0));
  }

  // O = O alpha + P V (the AIC's block, fp32 rows of vPitch in the workspace).
  __aicore__ inline void Accumulate() {
    const AttentionTilingData& t = *t_;
    const uint32_t vp = t.vPitch, dv = uint32_t(t.valueDim), dv8 = (dv + 7) / 8 * 8;
    LocalTensor<float> o = oBuf_.Get<float>(), s = sBuf_.Get<float>(),
                       alpha = statBuf_.Get<float>()[2 * attention_vec::kMaxRows];
    for (uint32_t r = 0; r < rows_; ++r) Muls(o[r * vp], o[r * vp], alpha.GetValue(r), int32_t(vp));
    const uint32_t chunk = (maxRows_ * uint32_t(t.s2Block)) / vp;  // rows of P V per pass through the S buffer
    for (uint32_t c = 0; c < rows_; c += chunk) {
      const uint32_t rc = rows_ - c < chunk ? rows_ - c : chunk;
      SyncPipes<HardEvent::V_MTE2>();
      DataCopyPad(s, oWs_[int64_t(r0_ + c) * vp],
                  DataCopyExtParams(uint16_t(rc), dv * 4, (vp - dv) * 4, (vp - dv8) / 8, 0),
                  DataCopyPadExtParams<float>(dv8 != dv, 0, uint8_t(dv8 - dv), 0.0f));
      SyncPipes<HardEvent::MTE2_V>();
      Add(o[c * vp], o[c * vp], s, int32_t(rc * vp));
    }
  }

  // out = O / l, softmax_max = m, softmax_sum = l; a row that kept no key: 0, -FLT_MAX, FLT_MAX.
  __aicore__ inline void Finish(const AttentionTask& task) {
    using namespace attention_vec;
    const AttentionTilingData& t = *t_;
    const uint32_t vp = t.vPitch, dv = uint32_t(t.valueDim), L = uint32_t(kAttentionStatLanes);
    LocalTensor<float> o = oBuf_.Get<float>(), rowV = rowVBuf_.Get<float>();
    LocalTensor<float> stats = outStatBuf_.Get<float>(), mx = stats, sm = stats[rows_ * L];
    for (uint32_t r = 0; r < rows_; ++r) {
      const bool none = !(mRun_[r] > kMasked);
      if (none) {
        Duplicate(o[r * vp], 0.0f, int32_t(vp));
      } else {
        Duplicate(rowV, lRun_[r], int32_t(vp));
        Div(o[r * vp], o[r * vp], rowV, int32_t(vp));
      }
      Duplicate(mx[r * L], none ? -kFltMax : mRun_[r], int32_t(L));
      Duplicate(sm[r * L], none ? kFltMax : lRun_[r], int32_t(L));
    }
    const int64_t row = task.qTok0 + task.i0 + r0_;
    const int64_t oOff = task.b * t.oStrideB + task.n * t.oStrideN + row * t.oStrideS;
    const uint32_t gap = uint32_t((t.oStrideS - t.valueDim) * int64_t(sizeof(T)));
    const uint32_t rowBytes = (dv * sizeof(T) + 31) / 32 * 32;
    if constexpr (sizeof(T) == 4) {
      SyncPipes<HardEvent::V_MTE3>();
      DataCopyPad(out_[oOff], o, DataCopyExtParams(uint16_t(rows_), dv * 4, (vp * 4 - rowBytes) / 32, gap, 0));
    } else {
      LocalTensor<T> staged = boundBuf_.Get<T>();
      const uint32_t chunk = (maxRows_ * uint32_t(t.s2Block) * 4) / (vp * uint32_t(sizeof(T)));
      for (uint32_t c = 0; c < rows_; c += chunk) {
        const uint32_t rc = rows_ - c < chunk ? rows_ - c : chunk;
        SyncPipes<HardEvent::MTE3_V>();
        Cast(staged, o[c * vp], RoundMode::CAST_RINT, rc * vp);
        SyncPipes<HardEvent::V_MTE3>();
        DataCopyPad(
            out_[oOff + int64_t(c) * t.oStrideS], staged,
            DataCopyExtParams(uint16_t(rc), dv * sizeof(T), (vp * uint32_t(sizeof(T)) - rowBytes) / 32, gap, 0));
      }
    }
    // stats rows, 8 floats each: [B, N1, S1, 8]; TND (torch_npu's default) one [N1, s1, 8] block per sequence
    const int64_t sOff = t.varlen ? (task.qTok0 * t.heads + task.n * task.s1 + task.i0 + r0_) * int64_t(L)
                                  : ((task.b * t.heads + task.n) * task.s1 + task.i0 + r0_) * int64_t(L);
    const DataCopyExtParams sp(1, rows_ * L * 4, 0, 0, 0);
    SyncPipes<HardEvent::V_MTE3>();
    DataCopyPad(max_[sOff], mx, sp);
    DataCopyPad(sum_[sOff], sm, sp);
  }

  const AttentionTilingData* t_ = nullptr;
  uint32_t sub_ = 0, r0_ = 0, rows_ = 0, maxRows_ = 0;  // maxRows_: the buffers' rows
  float mRun_[attention_vec::kMaxRows];
  float lRun_[attention_vec::kMaxRows];
  GlobalTensor<float> sWs_, oWs_, max_, sum_;
  GlobalTensor<T> pWs_, out_;
  GlobalTensor<uint8_t> mask_;
  TPipe pipe_;
  TBuf<TPosition::VECCALC> sBuf_, boundBuf_, maskBuf_, maskHalfBuf_, oBuf_, rampBuf_, rowABuf_, rowBBuf_, rowVBuf_,
      statBuf_, outStatBuf_, redBuf_;
};
