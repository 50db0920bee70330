// Host tiling of the fused attention backward (two passes on one AIC and its two AIVs per task): a pure
// function of the problem (the forward's, attention_tiling.h) and the chip's cube cores.
#pragma once
#include <vector>

#include "attention_grad_tiling_data.h"
#include "attention_tiling.h"

namespace tiling {

struct AttentionGradTiling {
  AttentionGradTilingData data;
  uint32_t blockDim;                 // core groups; 0: nothing to compute
  int64_t workspaceBytes;            // user workspace (the launch adds the system workspace before it)
  std::vector<int64_t> varlenTable;  // TND: cumQ then cumKv, the int64s that follow `data` in GM
};

// The tiling for `problem` on `platform`'s cube cores, or a TilingError when a head dim leaves no block
// sizes that fit L1 / L0 / UB.
AttentionGradTiling TileAttentionGrad(const AttentionProblem& problem, const CubePlatform& platform);

// The S1 blocks every dk / dv task visits per query head, in task order (tests count the skipped work).
std::vector<int64_t> AttentionGradKvTaskBlocks(const AttentionGradTiling& t);

}  // namespace tiling
