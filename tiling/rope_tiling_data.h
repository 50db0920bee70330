// Tiling data shared by the host tiling (rope_tiling.cpp) and the RoPE kernel (csrc/kernels/rope.cpp).
// x is seen as rows [xDims[0], xDims[1], xDims[2]] of headDim elements; cos/sin rows broadcast
// along any of those dims. A tile is up to tileRows consecutive indices along tileAxis (the
// innermost dim along which cos/sin vary); the other two dims ("line" dims) pick the tile's line.
// A task loads one cos/sin tile and applies it to every line that shares it, i.e. it fixes the
// line dims along which cos/sin vary and loops over those along which they broadcast, tileLines
// of those lines at a time (one UB tile of tileLines x tileRows rows, one vector instruction each).
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one list per op, and their GM parameters (tiling/kernel_dtypes.h says how they are read).
// One kernel serves rotary_mul, rope_customer and their grads (x, cos, sin, y share the dtype).
#define ROPE_DTYPES ASCENDC_FLOAT_DTYPES
#define ROPE_PARAMS(GM) GM x, GM cos, GM sin, GM y, GM workspace, GM tiling
// apply_rotary_pos_emb(_grad): query and key rotated in place by one launch.
#define APPLY_ROPE_PARAMS(GM) GM query, GM key, GM cos, GM sin, GM workspace, GM tiling

// TUTORIAL: the pair rotation of INTERLEAVE, with both lanes of pair i reading cos/sin at lane 2i
// (rope_customer, as the Ascend C tutorial's kernel reads its pair-repeated tables).
enum RopeMode : uint32_t { ROPE_MODE_HALF = 0, ROPE_MODE_INTERLEAVE = 1, ROPE_MODE_TUTORIAL = 2 };

struct RopeTilingData {
  uint32_t headDim;        // D: elements per row
  uint32_t rowPitch;       // D rounded up to whole 32-byte blocks of the input dtype: the UB row length
  uint32_t rotaryMode;     // RopeMode
  uint32_t backward;       // 1: dx = dy*cos + rot^T(dy*sin); 0: y = x*cos + rot(x)*sin
  uint32_t tileAxis;       // 0..2: the dim a tile walks along
  uint32_t lineAxes[2];    // the other two dims, outer first
  uint32_t lineVaries[2];  // 1 where cos/sin vary along that line dim (fixed per task), 0 where they broadcast
  uint32_t tileRows;       // rows per UB tile
  uint32_t tilesPerLine;   // ceil(xDims[tileAxis] / tileRows)
  uint32_t rotateByCopy;   // 1: P is two strided UB->UB copies (half mode, D/2 fp32 whole 32-byte blocks); 0: Gather
  uint32_t xBuffers;  // UB buffers for x and for y: 3 where the tile leaves UB spare (hides DMA latency), else 2
  uint32_t tileLines;  // lines that share cos/sin loaded into one UB tile (>= 1); also keeps int64s 8-byte aligned
  int64_t xDims[3];  // row dims of x (and of y)
  int64_t xStrides[3];  // row stride of x per dim
  int64_t rStrides[3];  // row stride of cos/sin per dim; 0 where they broadcast
  int64_t xRows;  // rows of x
  int64_t rRows;  // rows of cos/sin
  int64_t sharedLines;  // lines per task: the product of the broadcast line dims
  int64_t taskCount;  // (lines / sharedLines) * tilesPerLine
  int64_t tasksPerBlock;  // every block takes this many tasks ...
  int64_t tasksRemainder;  // ... and the first tasksRemainder blocks one more
  int64_t xRowElems;  // GM elements from one x row to the next: headDim, or more under partial rotary
};

// apply_rotary_pos_emb: query's and key's RoPE tilings, run one after the other by every block of
// one launch; each part's tasks are split over the launch's blocks (tasksPerBlock may be 0).
struct ApplyRopeTilingData {
  RopeTilingData query;
  RopeTilingData key;
};
