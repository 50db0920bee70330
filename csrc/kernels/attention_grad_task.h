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
