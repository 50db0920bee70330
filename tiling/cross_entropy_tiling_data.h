// Tiling data shared by the host tiling (cross_entropy_tiling.cpp) and the cross-entropy kernels
// (csrc/kernels/cross_entropy.cpp, cross_entropy_grad.cpp). input / log_prob are [rows, cols] (N tokens by C
// classes); a row is walked in chunks of chunkCols columns (the last one shorter), so no row has to fit in UB.
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one list per op, and their GM parameters (tiling/kernel_dtypes.h says how they are read).
// rowStats: fp32 [rows, 4], per row (loss term, weight of the target, lse, counted 1/0); the binding reduces it.
// rowCoef: fp32 [3, rows], per row (k, a, b): x_grad = exp(log_prob) * k - a * onehot(target) - b * weight.
#define CROSS_ENTROPY_LOSS_DTYPES ASCENDC_FLOAT_DTYPES
#define CROSS_ENTROPY_LOSS_GRAD_DTYPES ASCENDC_FLOAT_DTYPES
#define CROSS_ENTROPY_LOSS_PARAMS(GM) GM input, GM target, GM weight, GM logProb, GM rowStats, GM workspace, GM tiling
#define CROSS_ENTROPY_LOSS_GRAD_PARAMS(GM) \
  GM logProb, GM target, GM weight, GM rowCoef, GM xGrad, GM workspace, GM tiling

// Per-row results the forward kernel writes, in this order, kCrossEntropyStats floats per row.
constexpr uint32_t kCrossEntropyStats = 4;
constexpr uint32_t kCrossEntropyStatLoss = 0;    // (1 - ls) * w[t] * (lse - x[t]) + ls / C * sum_c w[c] (lse - x[c])
constexpr uint32_t kCrossEntropyStatWeight = 1;  // w[t] (1 without a weight); 0 for an ignored row
constexpr uint32_t kCrossEntropyStatLse = 2;     // log(sum_c exp(x[c])), every row
constexpr uint32_t kCrossEntropyStatCount = 3;   // 1, or 0 for an ignored row
// A target that is neither ignore_index nor in [0, C) gets NaN loss, weight and count (the CPU binding refuses
// it before the launch; a device launch cannot look at the values without a sync).

// The reductions, as the op's `reduction` attribute names them.
enum CrossEntropyReduction : uint32_t { CROSS_ENTROPY_NONE = 0, CROSS_ENTROPY_MEAN = 1, CROSS_ENTROPY_SUM = 2 };

enum CrossEntropyTilingKey : uint32_t {
  CROSS_ENTROPY_KEY_FORWARD = 0,   // log_prob and the per-row results
  CROSS_ENTROPY_KEY_BACKWARD = 1,  // x_grad from log_prob and the per-row coefficients
};

struct CrossEntropyTilingData {
  int64_t rows;           // N
  int64_t cols;           // C
  int64_t rowsPerBlock;   // every block takes this many consecutive rows ...
  int64_t rowsRemainder;  // ... and the first rowsRemainder blocks one more
  int64_t ignoreIndex;    // target value whose row is left out
  uint32_t chunkCols;     // columns per chunk: cols when one chunk holds the row, else a multiple of 64
  uint32_t chunkCount;    // ceil(cols / chunkCols)
  uint32_t chunkElems;    // UB elements of each chunk buffer: chunkCols rounded up to 64
  uint32_t hasWeight;     // 1: weight [C] (fp32) is given
  uint32_t weightChunks;  // 1: the kernel loads weight chunks (label smoothing with a weight)
  uint32_t reduction;     // CrossEntropyReduction (the op package's finish phase)
  float labelSmoothing;   // ls in [0, 1)
  float lseSquareScale;   // z-loss scale s in [0, 1)
  uint32_t returnZloss;   // 1: the op package writes zloss
  uint32_t backward;      // 0: forward; 1: backward
};
