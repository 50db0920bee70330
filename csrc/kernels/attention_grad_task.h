// The fused attention backward's tasks (attention_task.h walks them: key tasks, then query tasks) and the
// cross-core flags of one group (mode 2: the AIC and its two AIVs). No Matmul object and no SyncAll, so
// ids 1-4 are free (the library takes 0..2N-1, SyncAll 11-14).
#pragma once
#include "attention_grad_tiling_data.h"
#include "attention_task.h"

struct AttentionGradFlags {
  static constexpr uint16_t kSReady = 1;  // AIC -> AIVs: S and dP of a step are in the workspace
  static constexpr uint16_t kPReady = 2;  // AIVs -> AIC: both halves of P^T and dS (or dS) are in the workspace
  static constexpr uint16_t kRReady = 3;  // AIC -> AIVs: the step's dv / dk (or dq) parts are in the result slots
  static constexpr uint16_t kRFree = 4;   // AIVs -> AIC: both have read them; the slots may be written again
};

// 16-bit inputs: a key step's P and dS go to the workspace as the AIVs hold them, [rows, Align8(cols)], and the
// cube transposes them as it loads them into L0A (LoadData 2D transposes b16 fractals only); fp32: the AIVs
// transpose them by Gather into P^T / dS^T [cols, s1Pitch].
template <typename T>
constexpr bool kAttentionGradCubeTransposes = sizeof(T) == 2;

// A group's workspace blocks (AttentionGradTilingData's offsets), the same for its AIC and its AIVs.
template <typename T>
struct AttentionGradWorkspace {
  GlobalTensor<float> s, dp, r1, r2;  // S, dP; the cube's results (dk or dq rows, dv rows)
  GlobalTensor<T> p, ds;              // P^T; dS^T or dS
  __aicore__ inline void Init(GM_ADDR group, const AttentionGradTilingData& g) {
    s.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group));
    dp.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + g.dpOffset));
    p.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(group + g.pOffset));
    ds.SetGlobalBuffer(reinterpret_cast<__gm__ T*>(group + g.dsOffset));
    r1.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + g.r1Offset));
    r2.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(group + g.r2Offset));
  }
};
