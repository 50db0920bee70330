// Host tiling of the fused linear cross-entropy (forward and backward): a pure function of the problem and the
// chip's cube cores.
#pragma once
#include "cube_tiling_rules.h"  // CubePlatform: the cube cores and their L1 / L0 buffers
#include "linear_cross_entropy_tiling_data.h"
#include "platform.h"

namespace tiling {

// The problem after the argument checks (linear_cross_entropy_problem.h), in elements.
struct LinearCrossEntropyProblem {
  DType dtype;  // hidden's and weight's
  int64_t tokens, hidden, vocab, vocabStart;
  float softcap;
  bool hasBias, hasClassWeight;  // the optional bias [V] and class weights [V]
  bool backward;
};

struct LinearCrossEntropyTiling {
  LinearCrossEntropyTilingData data;
  uint32_t blockDim;       // core groups; 0: nothing to compute
  int64_t workspaceBytes;  // user workspace (the launch adds the system workspace before it)
};

// The forward's L2 budget (half of A2's 192 MiB L2, docs/pipeline-model.md, the rest left to what else the chip
// caches): a launch's hidden rows, weight rows and workspace are held to it, so every re-read of a weight or hidden
// chunk by another task can be an L2 hit; the shard's vocabulary takes as many launches as that needs.
constexpr int64_t kLceL2Budget = int64_t(96) << 20;

// The tiling of the (forward: first) launch. `l2Budget` 0: the forward in one launch (the op package's single
// kernel), else in launches of at most that footprint (data.launches of data.launchRows vocabulary rows).
LinearCrossEntropyTiling TileLinearCrossEntropy(const LinearCrossEntropyProblem& problem, const CubePlatform& platform,
                                                int64_t l2Budget = 0);

// The forward's launch k of `first`'s data.launches (k = 0 gives `first` back): its vocabulary rows, chained to
// the launches before it.
LinearCrossEntropyTiling TileLinearCrossEntropyLaunch(const LinearCrossEntropyTiling& first, int64_t k,
                                                      const CubePlatform& platform);

}  // namespace tiling
