// Tiling data shared by the host tiling (optimizer_tiling.cpp) and the AdamW kernel (csrc/kernels/optimizer.cpp).
// The update runs over a flat run of elements: one tensor (apply_adam_w), or a list of tensors laid end to end
// (the multi-tensor form), and each block takes blockElems consecutive elements of that run, whichever tensors
// they fall in. A task is one tile of up to tileElems elements inside one tensor.
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The parameter (and grad) in one of the float dtypes; the states m, v (and the amsgrad maximum) in float32.
#define APPLY_ADAM_W_DTYPES(X, ...)                 \
  X(float, float, float, Float, Float, __VA_ARGS__) \
  X(half, half, float, Half, Float, __VA_ARGS__)    \
  X(bfloat16, bfloat16_t, float, BFloat16, Float, __VA_ARGS__)
#define APPLY_ADAM_W_PARAMS(GM) GM var, GM m, GM v, GM grad, GM max_grad_norm, GM workspace, GM tiling
#define FOREACH_ADAM_W_PARAMS(GM) GM table, GM workspace, GM tiling

// One row of the multi-tensor form's tensor table (int64 in GM): each tensor's addresses and where its
// elements start in the flat run. The table is numbered in these units.
enum AdamWTableColumn : uint32_t {
  ADAM_W_TABLE_VAR = 0,
  ADAM_W_TABLE_M = 1,
  ADAM_W_TABLE_V = 2,
  ADAM_W_TABLE_GRAD = 3,
  ADAM_W_TABLE_MAX = 4,     // the amsgrad maximum of v, 0 without amsgrad
  ADAM_W_TABLE_MASTER = 5,  // the fp32 master copy of a 16-bit var, 0 without one
  ADAM_W_TABLE_START = 6,   // the tensor's first element in the flat run; the next row's start ends it
  ADAM_W_TABLE_COLUMNS = 7,
};

struct AdamWTilingData {
  int64_t totalElems;    // elements of the flat run (the sum over every tensor)
  int64_t blockElems;    // block b updates elements [b * blockElems, (b + 1) * blockElems) of the run
  int64_t tensorCount;   // rows of the tensor table (1 for apply_adam_w, whose tensors are its arguments)
  uint32_t tileElems;    // elements per tile: a multiple of 64, so every buffer is whole 256-byte repeats
  uint32_t amsgrad;      // 1: v's running maximum is kept and divides the step
  float decay;           // 1 - lr * weight_decay: the decoupled weight decay, applied to the parameter first
  float gradSign;        // -1 when maximizing (the gradient ascends), else 1
  float weight1;         // 1 - beta1: m = m + weight1 * (g - m), torch's lerp
  float beta2;           // v = beta2 * v + squareScale * g * g
  float squareScale;     // 1 - beta2
  float rsqrtCorrection2;  // 1 / sqrt(1 - beta2^step): v's bias correction under the square root
  float eps;             // added to the corrected sqrt(v)
  float negStepSize;     // -lr / (1 - beta1^step): the step along m / denom
  uint32_t master;  // 1: a 16-bit var has an fp32 master copy, read and updated in its place; var = its rounding
  uint32_t reserved;
};

// foreach_norm: the p-norm of each tensor of a list, one launch. Blocks take runs of the flat element range as the
// AdamW update does; each (block, tensor) piece leaves its partial (a sum, or a max for inf) in a 32-byte slot of
// fp32: slot b + k for block b and tensor k (pieces in order of the run, so b + k numbers them). The slots are
// combined per tensor after the blocks: by the torch binding (its [tensors + blocks] vector), or in the op package
// by block 0 after SyncAll.
#define FOREACH_NORM_DTYPES ASCENDC_FLOAT_DTYPES
#define FOREACH_NORM_PARAMS(GM) GM table, GM partials, GM workspace, GM tiling

enum ForeachNormKind : uint32_t {
  FOREACH_NORM_L1 = 0,  // sum |x|
  FOREACH_NORM_L2 = 1,  // sqrt(sum x^2)
  FOREACH_NORM_INF = 2,  // max |x|
};
constexpr uint32_t kForeachNormSlotFloats = 8;  // a slot: one 32-byte block, its first float the partial

struct ForeachNormTilingData {
  int64_t totalElems;  // elements of the flat run
  int64_t blockElems;  // block b reads elements [b * blockElems, (b + 1) * blockElems) of the run
  int64_t tensorCount;  // rows of the table: int64 [tensorCount, 2] of (address, first element in the run)
  uint32_t tileElems;  // elements per tile: a multiple of 64
  uint32_t kind;  // ForeachNormKind
  uint32_t blockDim;  // blocks launched: the slots number tensorCount + blockDim
  uint32_t reserved;
};

// foreach_clip_by_total_norm: every tensor of a list scaled in place by min(1, max_norm / (total + 1e-6)), the total
// formed on the device from the per-tensor norms (foreach_norm's outputs): each block reads them all, forms the
// coefficient, then scales its run of the flat element range (as the AdamW update deals it). Block 0 writes the
// total. The direct entry's table: int64 [tensorCount, 2] of (address, first element in the run), then normCount
// addresses of the norms (one element each, x's dtype).
#define FOREACH_CLIP_DTYPES ASCENDC_FLOAT_DTYPES
#define FOREACH_CLIP_PARAMS(GM) GM table, GM total_norm, GM workspace, GM tiling

// Norms read per pass: each lands in its own 32-byte UB slot (DataCopyPad from any GM address), zero-padded.
constexpr uint32_t kForeachClipNormChunk = 64;

struct ForeachClipTilingData {
  int64_t totalElems;  // elements of the flat run of x
  int64_t blockElems;  // block b scales elements [b * blockElems, (b + 1) * blockElems) of the run
  int64_t tensorCount;  // tensors of x
  int64_t normCount;  // norms the total is formed from (x's own, and those of lists clipped with it)
  uint32_t tileElems;  // elements per tile: a multiple of 64
  uint32_t kind;  // ForeachNormKind: how the norms combine (sum, sqrt of the sum of squares, max)
  float maxNorm;  // the clipping threshold
  uint32_t errorIfNonfinite;  // 1: a non-finite total leaves x as it is (the caller raises, as torch does)
};
