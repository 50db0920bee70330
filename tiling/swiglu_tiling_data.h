// Tiling data shared by the host tiling (swiglu_tiling.cpp) and the SwiGLU kernels (csrc/kernels/swiglu.cpp).
// x is seen as [outer, 2, inner]: row r holds A = x[r, 0, :] and B = x[r, 1, :], each `inner` contiguous
// elements (split dim halved times the dims after it); y and dy are [outer, inner], dx is x's shape.
// A task is one tile of up to tileRows rows by up to tileCols columns of that [outer, inner] problem.
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one list per op, and their GM parameters (tiling/kernel_dtypes.h says how they are read).
#define SWIGLU_DTYPES ASCENDC_FLOAT_DTYPES
#define SWIGLU_GRAD_DTYPES SWIGLU_DTYPES
#define SWIGLU_PARAMS(GM) GM x, GM y, GM workspace, GM tiling
#define SWIGLU_GRAD_PARAMS(GM) GM dy, GM x, GM dx, GM workspace, GM tiling

enum SwigluTilingKey : uint32_t {
  SWIGLU_KEY_FORWARD_WHOLE_ROWS = 0,   // y = silu(A) * B, every tile holds whole rows
  SWIGLU_KEY_FORWARD_SPLIT_ROWS = 1,   // y = silu(A) * B, rows split into column tiles (large inner or few rows)
  SWIGLU_KEY_BACKWARD_WHOLE_ROWS = 2,  // dx = [dy * B * silu'(A), dy * silu(A)], whole rows
  SWIGLU_KEY_BACKWARD_SPLIT_ROWS = 3,  // dx as above, rows split into column tiles
  SWIGLU_KEY_FORWARD_PACKED = 4,       // y = silu(A) * B, inner 1: a tile of rows is one run of (a, b) pairs
};

struct SwigluTilingData {
  int64_t outer;           // rows: the product of x's dims before the split dim
  int64_t inner;           // elements of A (and of B, y and dy) per row
  int64_t rowTiles;        // ceil(outer / tileRows)
  int64_t colTiles;        // ceil(inner / tileCols); task t covers row tile t / colTiles, column tile t % colTiles
  int64_t taskCount;       // rowTiles * colTiles
  int64_t tasksPerBlock;   // every block takes this many consecutive tasks ...
  int64_t tasksRemainder;  // ... and the first tasksRemainder blocks one more
  uint32_t tileRows;       // rows per tile (DataCopyPad blockCount, 1..4095)
  uint32_t tileCols;       // columns per tile: inner, or a whole number of 32-byte blocks when rows are split
  uint32_t tilePitch;  // tileCols rounded up to whole 32-byte blocks of the input dtype: UB elements per tile row
  uint32_t backward;  // 0: forward (x -> y); 1: backward ((dy, x) -> dx)
  uint32_t packed;  // SWIGLU_KEY_FORWARD_PACKED: tiles of tileRows pairs, de-interleaved by Gather (swiglu_packed.h)
};
