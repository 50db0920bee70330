// Host tiling of the fused attention forward (FlashAttention-2 on one AIC and its two AIVs per task):
// a pure function of the problem and the chip's cube cores.
#pragma once
#include <utility>
#include <vector>

#include "attention_tiling_data.h"
#include "cube_tiling_rules.h"  // CubePlatform: the cube cores and their L1 / L0 buffers
#include "platform.h"

namespace tiling {

// The problem after the argument checks (attention_problem.h), in elements.
struct AttentionProblem {
  AttentionLayout layout;
  DType dtype;
  int64_t batch, heads, kvHeads, headDim, valueDim;
  int64_t s1, s2;                    // per batch (TND: the longest)
  std::vector<int64_t> cumQ, cumKv;  // TND: cumulative ends, one per batch (else empty)
  float scale;
  int64_t sparseMode, preTokens, nextTokens;
  bool maskDefined;
  std::vector<int64_t> maskShape;  // atten_mask's shape when defined
  float softcap;                   // 0: none
  bool sinkDefined;                // per-head sink logits (fp32 [N1]) join every row's softmax
  float keepProb = 1.0f;           // < 1: dropout with the given drop_mask (AttentionTilingData::dropout)
};

struct AttentionTiling {
  AttentionTilingData data;
  uint32_t blockDim;                // core groups; 0: nothing to compute
  int64_t workspaceBytes;           // user workspace (the launch adds the system workspace before it)
  std::vector<int64_t> varlenTable;  // TND: cumQ then cumKv, the int64s that follow `data` in GM
};

// The tiling for `problem` on `platform`'s cube cores (one group per cube core), or a TilingError when a
// head dim leaves no block sizes that fit L1 / L0 / UB.
AttentionTiling TileAttention(const AttentionProblem& problem, const CubePlatform& platform);

// Each batch's query rows and keys: S1 and S2 for every batch, or TND's from `varlenTable` (cumQ, cumKv).
std::vector<std::pair<int64_t, int64_t>> AttentionBatchLengths(const AttentionTilingData& t,
                                                               const std::vector<int64_t>& varlenTable);

// The S2 blocks every task needs, in task order (tests and the harness count the work the band skips).
std::vector<int64_t> AttentionTaskBlocks(const AttentionTiling& t);

}  // namespace tiling
