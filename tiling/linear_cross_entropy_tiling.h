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

LinearCrossEntropyTiling TileLinearCrossEntropy(const LinearCrossEntropyProblem& problem, const CubePlatform& platform);

}  // namespace tiling
