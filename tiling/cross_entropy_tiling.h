// Host tiling for cross_entropy_loss and cross_entropy_loss_grad: a pure function of the problem and the platform.
#pragma once
#include "cross_entropy_tiling_data.h"
#include "platform.h"

namespace tiling {

struct CrossEntropyProblem {
  int64_t rows;  // N
  int64_t cols;  // C
  DType dtype;   // input / log_prob
  bool hasWeight;
  bool backward;
  CrossEntropyReduction reduction;
  int64_t ignoreIndex;
  float labelSmoothing;
  float lseSquareScale;
  bool returnZloss;
};

struct CrossEntropyTiling {
  CrossEntropyTilingData data;
  uint32_t blockDim;  // 0 when there is nothing to compute
  CrossEntropyTilingKey tilingKey;
};

// The widest chunk (a multiple of 64 columns) whose buffers fit the platform's UB budget.
uint32_t CrossEntropyMaxChunk(DType dtype, bool weightChunks, const PlatformInfo& platform);

CrossEntropyTiling TileCrossEntropy(const CrossEntropyProblem& problem, const PlatformInfo& platform);

}  // namespace tiling
