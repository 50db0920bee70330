// Host tiling for SwiGLU (swiglu and swiglu_grad): a pure function of (outer, inner, dtype, direction)
// and the platform.
#pragma once
#include "platform.h"
#include "swiglu_tiling_data.h"

namespace tiling {

struct SwigluProblem {
  int64_t outer;  // rows of x viewed as [outer, 2, inner]
  int64_t inner;  // elements of each half per row
  DType dtype;
  bool backward;
};

struct SwigluTiling {
  SwigluTilingData data;
  uint32_t blockDim;  // 0 when there is nothing to compute
  SwigluTilingKey tilingKey;
};

// UB bytes one tile element costs: the double-buffered queues (forward: A, B in, y out; backward:
// dy, A, B in, dA, dB out) plus the fp32 work buffers (swiglu_buffers.h, the kernels' Init's plan).
uint32_t SwigluBytesPerElem(DType dtype, bool backward);

// UB bytes one row of a packed tile (inner 1, forward) costs: the (a, b) pair in and y out, double-buffered;
// a and b de-interleaved; fp32 a, b and the result (16-bit dtypes); the gather offsets (swiglu_buffers.h).
uint32_t SwigluPackedBytesPerRow(DType dtype);

// Below this many columns a row is not split further just to give idle cores work.
constexpr int64_t kSwigluMinSplitCols = 1024;

SwigluTiling TileSwiglu(const SwigluProblem& problem, const PlatformInfo& platform);

}  // namespace tiling
