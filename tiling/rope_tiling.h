// Host tiling for RoPE (rotary_mul, rope_customer and their backward): a pure function of shapes,
// dtype, mode and platform.
#pragma once
#include <array>

#include "platform.h"
#include "rope_tiling_data.h"

namespace tiling {

struct RopeProblem {
  std::array<int64_t, 3> xDims;  // rows of x as three dims (rank-3 x gets a leading 1)
  std::array<int64_t, 3> rDims;  // rows of cos/sin, each 1 (broadcast) or equal to xDims
  uint32_t headDim;              // D, even
  DType dtype;
  RopeMode mode;
  bool backward;
  uint32_t rowElems = 0;  // GM elements per x row when more than headDim (partial rotary, in place); 0: headDim
};

struct RopeTiling {
  RopeTilingData data;
  uint32_t blockDim;  // 0 when x is empty: nothing to launch
  RopeMode tilingKey;
};

// Whether the kernel swaps row halves with two strided UB->UB DataCopy (whole 32-byte blocks of
// fp32 per half row) instead of a Gather through an offset table.
bool RopeRotatesByCopy(uint32_t headDim, RopeMode mode);

// UB bytes one row of a tile costs: queues (x and y with xBuffers buffers each, cos and sin with
// two) plus the fp32 work buffers and, for the Gather path, the gather-offset and sign tables (rope_buffers.h, the
// kernel's Init's plan).
uint32_t RopeBytesPerRow(uint32_t headDim, DType dtype, RopeMode mode, uint32_t xBuffers = 2);

RopeTiling TileRope(const RopeProblem& problem, const PlatformInfo& platform);

struct ApplyRopeTiling {
  ApplyRopeTilingData data;
  uint32_t blockDim;  // 0 when both query and key are empty
  RopeMode tilingKey;
};

// query's and key's tilings for one launch of max(their blockDims) blocks.
ApplyRopeTiling TileApplyRope(const RopeProblem& query, const RopeProblem& key, const PlatformInfo& platform);

}  // namespace tiling
