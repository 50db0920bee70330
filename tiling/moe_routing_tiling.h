// Host tiling for the MoE routing kernels: a pure function of the shapes and the platform.
#pragma once
#include "moe_routing_tiling_data.h"
#include "platform.h"

namespace tiling {

struct MoeRoutingProblem {
  int64_t tokens, topK, hidden, numOut;
  DType dtype;
  bool hasProbs;
  bool unpermute;  // unpermute and its grad: no sort
};

struct MoeRoutingTiling {
  MoeRoutingTilingData data;
  uint32_t sortBlocks;    // blockDim of the chunk sort (0: nothing to sort)
  uint32_t rowBlocks;     // blockDim of the row phase (gather / unpermute)
  int64_t workspaceBytes; // two buffers of sortLen (score, index) pairs for the merge rounds
};

constexpr int64_t kMoeSortChunk = 4096;   // 128 Sort32 repeats: ids, scores, indices, pairs and tmp fit the UB
constexpr int64_t kMoeMergeWindow = 1024; // 4 input windows + the merged window: 40 KiB of UB
constexpr uint32_t kMoeColChunk = 4096;   // row elements per pass: about 32 B of UB each, double-buffered

MoeRoutingTiling TileMoeRouting(const MoeRoutingProblem& problem, const PlatformInfo& platform);

// Sets up merge round `round` (0-based) of `t`: lists of chunkLen * 4^round; false when sorted.
bool MoeMergeRound(MoeRoutingTilingData& t, int round, uint32_t& blockDim);

}  // namespace tiling
