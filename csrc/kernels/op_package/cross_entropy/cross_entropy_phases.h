// The op package's cross-entropy as one launch each way. The torch path does the [N]-sized steps with torch
// (csrc/torch/cross_entropy_ops.cpp); an op is one kernel, so here the blocks do them around SyncAll:
//   forward   row kernel -> per-row results in the user workspace -> SyncAll -> loss / zloss / lse_for_zloss
//             ('none': each block its rows; 'mean' / 'sum': block 0 sums every row, compensated, in row order)
//   backward  per-row (a D, b D, z D_z) and each block's partial D, D_z in the workspace -> SyncAll -> every block
//             adds the partials in block order (the same D in each) -> the row kernel divides as it goes
// The host (csrc/op_host/cross_entropy/cross_entropy_host.h) sizes the workspace and asks for batch scheduling.
#pragma once
#include "kernels/cross_entropy.cpp"
#include "kernels/cross_entropy_grad.cpp"

constexpr uint32_t kCrossEntropyPieceRows = 256;  // rows the [N]-sized phases take through UB at a time

// hi + lo accumulates v with its rounding error (Kahan-Babuska): the sums over N rows stay within a rounding or two.
__aicore__ inline void CrossEntropyAccumulate(float& hi, float& lo, float v) {
  const float s = hi + v;
  lo += (hi >= v || hi <= -v) ? (hi - s) + v : (v - s) + hi;
  hi = s;
}

// n fp32 values of `vals` rounded once into gm[first, first + n) (T) through `out`.
template <typename T>
__aicore__ inline void CrossEntropyStoreValues(const GlobalTensor<T>& gm, int64_t first, const LocalTensor<float>& vals,
                                               const LocalTensor<T>& out, uint32_t n) {
  if constexpr (sizeof(T) == sizeof(float)) {
    Muls(out, vals, 1.0f, static_cast<int32_t>(n));
  } else {
    Cast(out, vals, RoundMode::CAST_RINT, n);
  }
  SyncPipes<HardEvent::V_MTE3>();
  CrossEntropyStore(gm, first, out, n);
  SyncPipes<HardEvent::MTE3_V>();  // out is written again next
}

// Forward finish: rowStats [N, 4] (GM, written by every block before SyncAll) -> the outputs in T. Each block writes
// its own rows' lse_for_zloss (and for 'none' their loss and zloss); for 'mean' / 'sum' block 0 then sums every row.
template <typename T>
__aicore__ inline void CrossEntropyFinish(GM_ADDR rowStats, GM_ADDR loss, GM_ADDR zloss, GM_ADDR lse,
                                          const CrossEntropyTilingData& t) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> statBuf, valBuf, outBuf;
  pipe.InitBuffer(statBuf, kCrossEntropyPieceRows * kCrossEntropyStats * sizeof(float));
  pipe.InitBuffer(valBuf, 3 * kCrossEntropyPieceRows * sizeof(float));
  pipe.InitBuffer(outBuf, kCrossEntropyPieceRows * sizeof(float));
  LocalTensor<float> stats = statBuf.Get<float>(), vals = valBuf.Get<float>();
  LocalTensor<T> out = outBuf.Get<T>();
  GlobalTensor<float> statsGm;
  GlobalTensor<T> lossGm, zGm, lseGm;
  statsGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowStats), t.rows * kCrossEntropyStats);
  const bool none = t.reduction == CROSS_ENTROPY_NONE, zterm = t.lseSquareScale != 0.0f;
  lossGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(loss), none ? t.rows : 1);
  if (t.returnZloss) zGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(zloss), none ? t.rows : 1);
  if (zterm) lseGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(lse), t.rows);
  int64_t begin = 0, count = 0;
  BlockTaskRange(t.rowsPerBlock, t.rowsRemainder, begin, count);
  float sums[4][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}};  // loss, weight, count, z
  // pass 0: this block's rows, written out; pass 1 (block 0, 'mean' / 'sum'): every row, summed
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      if (none || GetBlockIdx() != 0) break;
      begin = 0, count = t.rows;
    } else if (!none && !zterm) {
      continue;  // nothing per row to write
    }
    for (int64_t r0 = begin; r0 < begin + count; r0 += kCrossEntropyPieceRows) {
      const int64_t left = begin + count - r0;
      const uint32_t n = static_cast<uint32_t>(left < kCrossEntropyPieceRows ? left : kCrossEntropyPieceRows);
      CrossEntropyLoad(stats, statsGm, r0 * kCrossEntropyStats, n * kCrossEntropyStats);
      SyncPipes<HardEvent::MTE2_S>();
      for (uint32_t i = 0; i < n; ++i) {
        const float l = stats.GetValue(i * kCrossEntropyStats + kCrossEntropyStatLoss);
        const float lseRow = stats.GetValue(i * kCrossEntropyStats + kCrossEntropyStatLse);
        const float counted = stats.GetValue(i * kCrossEntropyStats + kCrossEntropyStatCount);
        const float z = zterm ? lseRow * lseRow * t.lseSquareScale * counted : 0.0f;  // the torch path's order
        if (pass == 0) {
          vals.SetValue(i, l + z);
          vals.SetValue(kCrossEntropyPieceRows + i, z);
          vals.SetValue(2 * kCrossEntropyPieceRows + i, lseRow);
        } else {
          CrossEntropyAccumulate(sums[0][0], sums[0][1], l);
          CrossEntropyAccumulate(sums[1][0], sums[1][1],
                                 stats.GetValue(i * kCrossEntropyStats + kCrossEntropyStatWeight));
          CrossEntropyAccumulate(sums[2][0], sums[2][1], counted);
          CrossEntropyAccumulate(sums[3][0], sums[3][1], z);
        }
      }
      SyncPipes<HardEvent::S_MTE2>();  // stats is loaded again next
      if (pass == 1) continue;
      SyncPipes<HardEvent::S_V>();
      if (none) CrossEntropyStoreValues(lossGm, r0, vals, out, n);
      if (none && t.returnZloss) CrossEntropyStoreValues(zGm, r0, vals[kCrossEntropyPieceRows], out, n);
      if (zterm) CrossEntropyStoreValues(lseGm, r0, vals[2 * kCrossEntropyPieceRows], out, n);
      SyncPipes<HardEvent::V_S>();  // vals is written again next
    }
  }
  if (none || GetBlockIdx() != 0) return;
  float total[4];
  for (int k = 0; k < 4; ++k) total[k] = sums[k][0] + sums[k][1];
  const bool mean = t.reduction == CROSS_ENTROPY_MEAN;
  // 'mean': the loss over the counted rows' weights (as torch), the z-loss over their count (CANN's grad formula)
  const float z = mean ? total[3] / total[2] : total[3];
  vals.SetValue(0, (mean ? total[0] / total[1] : total[0]) + (zterm ? z : 0.0f));
  vals.SetValue(8, z);
  SyncPipes<HardEvent::S_V>();
  CrossEntropyStoreValues(lossGm, 0, vals, out, 1);
  if (t.returnZloss) CrossEntropyStoreValues(zGm, 0, vals[8], out, 1);
}

// Backward prologue, each block its rows: (a D, b D, z D_z) per row into rowCoef [3, N] and the block's partial
// (D, D_z) into its 32-byte slot. g and g_z are grad_loss / grad_zloss per row ('none') or their one value.
template <typename T>
__aicore__ inline void CrossEntropyGradRows(GM_ADDR gradLoss, GM_ADDR target, GM_ADDR weight, GM_ADDR gradZloss,
                                            GM_ADDR lse, GM_ADDR rowCoef, GM_ADDR slots,
                                            const CrossEntropyTilingData& t) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> rawBuf, wideBuf, coefBuf;
  pipe.InitBuffer(rawBuf, 3 * kCrossEntropyPieceRows * sizeof(T));
  pipe.InitBuffer(wideBuf, 3 * kCrossEntropyPieceRows * sizeof(float));
  pipe.InitBuffer(coefBuf, 3 * kCrossEntropyPieceRows * sizeof(float));
  LocalTensor<T> raw = rawBuf.Get<T>();
  LocalTensor<float> wide = wideBuf.Get<float>(), coef = coefBuf.Get<float>();  // fp32: wide is raw
  const bool none = t.reduction == CROSS_ENTROPY_NONE, zterm = t.lseSquareScale != 0.0f;
  const bool hasGz = gradZloss != nullptr;
  GlobalTensor<T> gGm, gzGm, lseGm;
  GlobalTensor<int64_t> targetGm;
  GlobalTensor<float> weightGm, coefGm;
  gGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gradLoss), none ? t.rows : 1);
  if (hasGz) gzGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(gradZloss), none ? t.rows : 1);
  if (zterm) lseGm.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(lse), t.rows);
  targetGm.SetGlobalBuffer(reinterpret_cast<__gm__ int64_t*>(target), t.rows);
  if (t.hasWeight) weightGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(weight), t.cols);
  coefGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(rowCoef), 3 * t.rows);
  int64_t begin = 0, count = 0;
  BlockTaskRange(t.rowsPerBlock, t.rowsRemainder, begin, count);
  float d[2] = {0.0f, 0.0f}, dz[2] = {0.0f, 0.0f};
  const float ls = t.labelSmoothing, s = t.lseSquareScale;
  for (int64_t r0 = begin; r0 < begin + count; r0 += kCrossEntropyPieceRows) {
    const int64_t left = begin + count - r0;
    const uint32_t n = static_cast<uint32_t>(left < kCrossEntropyPieceRows ? left : kCrossEntropyPieceRows);
    const uint32_t m = none ? n : 1;  // values of grad_loss / grad_zloss this piece reads
    CrossEntropyLoad(raw, gGm, none ? r0 : 0, m);
    if (hasGz) CrossEntropyLoad(raw[kCrossEntropyPieceRows], gzGm, none ? r0 : 0, m);
    if (zterm) CrossEntropyLoad(raw[2 * kCrossEntropyPieceRows], lseGm, r0, n);
    if constexpr (sizeof(T) == sizeof(float)) {
      wide = raw.template ReinterpretCast<float>();
      SyncPipes<HardEvent::MTE2_S>();
    } else {
      SyncPipes<HardEvent::MTE2_V>();
      Cast(wide, raw, RoundMode::CAST_NONE, 3 * kCrossEntropyPieceRows);  // lanes never loaded are never read
      SyncPipes<HardEvent::V_S>();
    }
    for (uint32_t i = 0; i < n; ++i) {
      const int64_t tg = targetGm.GetValue(r0 + i);
      const bool counted = tg != t.ignoreIndex;
      const float g = wide.GetValue(none ? i : 0);
      const float gz = hasGz ? wide.GetValue(kCrossEntropyPieceRows + (none ? i : 0)) : 0.0f;
      float w = counted ? 1.0f : 0.0f;
      if (counted && (tg < 0 || tg >= t.cols)) w = __builtin_nanf("");  // poisoned, never read out of bounds
      else if (counted && t.hasWeight) w = weightGm.GetValue(tg);
      const float c = counted ? 1.0f : 0.0f;
      coef.SetValue(i, g * (1.0f - ls) * w);
      coef.SetValue(kCrossEntropyPieceRows + i, g * ls / static_cast<float>(t.cols) * c);
      const float lseRow = zterm ? wide.GetValue(2 * kCrossEntropyPieceRows + i) : 0.0f;
      coef.SetValue(2 * kCrossEntropyPieceRows + i, zterm ? 2.0f * s * lseRow * c * (g + gz) : 0.0f);
      CrossEntropyAccumulate(d[0], d[1], w);
      CrossEntropyAccumulate(dz[0], dz[1], c);
    }
    SyncPipes<HardEvent::S_MTE3>();
    for (uint32_t k = 0; k < 3; ++k) CrossEntropyStore(coefGm, k * t.rows + r0, coef[k * kCrossEntropyPieceRows], n);
    SyncPipes<HardEvent::MTE3_S>();  // coef is written again next
    SyncPipes<HardEvent::S_MTE2>();  // raw is loaded again next (after the scalar reads of wide)
  }
  coef.SetValue(0, d[0] + d[1]);
  coef.SetValue(1, dz[0] + dz[1]);
  SyncPipes<HardEvent::S_MTE3>();
  GlobalTensor<float> slotGm;
  slotGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(slots), 8 * GetBlockNum());
  DataCopyPad(slotGm[8 * GetBlockIdx()], coef, DataCopyExtParams(1, 2 * sizeof(float), 0, 0, 0));
}

// After SyncAll: D, D_z from the blocks' slots (block order, so every block gets the same) and sum_c w[c].
__aicore__ inline void CrossEntropyGradScales(GM_ADDR weight, GM_ADDR slots, uint32_t blocks,
                                              const CrossEntropyTilingData& t, float& invD, float& invDz,
                                              float& weightSum) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> slotBuf;
  pipe.InitBuffer(slotBuf, 8 * blocks * sizeof(float));
  LocalTensor<float> slot = slotBuf.Get<float>();
  GlobalTensor<float> slotGm, weightGm;
  slotGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(slots), 8 * blocks);
  DataCopyPad(slot, slotGm, DataCopyExtParams(1, 8 * blocks * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>());
  SyncPipes<HardEvent::MTE2_S>();
  float d[2] = {0.0f, 0.0f}, dz[2] = {0.0f, 0.0f}, w[2] = {0.0f, 0.0f};
  for (uint32_t b = 0; b < blocks; ++b) {
    CrossEntropyAccumulate(d[0], d[1], slot.GetValue(8 * b));
    CrossEntropyAccumulate(dz[0], dz[1], slot.GetValue(8 * b + 1));
  }
  const bool mean = t.reduction == CROSS_ENTROPY_MEAN;
  const float sumD = d[0] + d[1], sumDz = dz[0] + dz[1];
  // every row ignored: a sum of 0 counts as 1, the gradient is 0 (never NaN)
  invD = mean && sumD != 0.0f ? 1.0f / sumD : 1.0f;
  invDz = mean && sumDz != 0.0f ? 1.0f / sumDz : 1.0f;
  if (!t.hasWeight) {
    weightSum = static_cast<float>(t.cols);
    return;
  }
  weightGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(weight), t.cols);
  for (int64_t c = 0; c < t.cols; ++c) CrossEntropyAccumulate(w[0], w[1], weightGm.GetValue(c));
  weightSum = w[0] + w[1];
}
