// Tiling data shared by the host tiling (rms_norm_tiling.cpp) and the RMSNorm kernels
// (csrc/kernels/rms_norm.cpp, csrc/kernels/rms_norm_grad.cpp). x is seen as [rows, hidden]; the
// row kernels deal whole rows to blocks. A row that fits in UB is processed in tiles of tileRows
// rows (NORM_SINGLE_PASS); a longer row is processed in column chunks, two passes per row
// (NORM_SPLIT_ROW: pass 1 sums squares chunk by chunk, pass 2 normalizes chunk by chunk).
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one list per op, and their GM parameters (tiling/kernel_dtypes.h says how they are read).
// rms_norm, add_rms_norm and their grads: one entry per (x, gamma) dtype pair of op_proto/rms_norm/rms_norm.json.
#define RMS_NORM_DTYPES ASCENDC_FLOAT_PAIR_DTYPES
#define ADD_RMS_NORM_DTYPES RMS_NORM_DTYPES
#define GATED_RMS_NORM_DTYPES RMS_NORM_DTYPES  // z: x's dtype (op_proto/rms_norm/gated_rms_norm.json)
#define RMS_NORM_GRAD_DTYPES RMS_NORM_DTYPES
#define ADD_RMS_NORM_GRAD_DTYPES RMS_NORM_DTYPES
#define GATED_RMS_NORM_GRAD_DTYPES RMS_NORM_DTYPES  // z, dz: x's dtype (op_proto/rms_norm/gated_rms_norm_grad.json)
// The dgamma reduction: one entry per gamma dtype.
#define RMS_NORM_DGAMMA_DTYPES ASCENDC_FLOAT_DTYPES
#define RMS_NORM_PARAMS(GM) GM x, GM gamma, GM y, GM rstd, GM workspace, GM tiling
#define ADD_RMS_NORM_PARAMS(GM) GM x1, GM x2, GM gamma, GM y, GM rstd, GM x, GM workspace, GM tiling
#define GATED_RMS_NORM_PARAMS(GM) GM x, GM gamma, GM z, GM y, GM rstd, GM workspace, GM tiling
#define RMS_NORM_GRAD_PARAMS(GM) GM dy, GM x, GM rstd, GM gamma, GM dx, GM workspace, GM tiling
#define ADD_RMS_NORM_GRAD_PARAMS(GM) GM dy, GM x, GM rstd, GM gamma, GM dxOut, GM dx, GM workspace, GM tiling
#define GATED_RMS_NORM_GRAD_PARAMS(GM) GM dy, GM x, GM rstd, GM gamma, GM z, GM dx, GM dz, GM workspace, GM tiling
#define RMS_NORM_DGAMMA_PARAMS(GM) GM partials, GM dgamma, GM workspace, GM tiling

enum NormTilingKey : uint32_t { NORM_SINGLE_PASS = 0, NORM_SPLIT_ROW = 1 };

// Rows of a single-pass tile at most (the per-row sums and rstd scratch are sized by it).
constexpr uint32_t NORM_MAX_TILE_ROWS = 255;
// Rows of one split-row backward group: their rstd and mean(dg * xhat) stay in scalar registers.
constexpr uint32_t NORM_SPLIT_GROUP_ROWS = 32;
// Short rows: columns per row left by the whole-tile folds for the Gather to transpose (at most). Each fold
// level costs the whole tile, the Gather 6x an Add per element (pipeline model): 32 is the cheaper split.
constexpr uint32_t NORM_SHORT_GATHER_COLS = 32;
// Packed rows (NormTilingData::packedRows): floats of a tile at most, so one Gather (count form, at most
// 255 full repeats of 64 floats) transposes or spreads it.
constexpr uint32_t NORM_PACKED_MAX_ELEMS = 255 * 64;
// dgamma reduction: partial rows in flight (each load is short: several hide the GM latency).
constexpr uint32_t NORM_REDUCE_BUFFER_NUM = 8;

struct NormTilingData {
  uint32_t hidden;               // N: elements per row (the normalized dims, flattened)
  uint32_t rowPitch;             // N rounded up to whole 32-byte blocks of x's dtype: one row's length in a UB tile
  uint32_t tilingKey;            // NormTilingKey
  uint32_t tileRows;             // rows per UB tile (1 in split-row mode)
  uint32_t chunk;                // columns per UB chunk, a multiple of 16 (rowPitch in single-pass mode)
  uint32_t chunkCount;           // ceil(N / chunk) (1 in single-pass mode)
  uint32_t reduceTmpElems;       // floats in the ReduceSum scratch buffer
  float epsilon;                 // added to mean(x^2) before the square root
  float invHidden;               // 1 / N
  uint32_t blockDim;             // blocks of the row kernel (backward: rows of the dgamma partials)
  int64_t rows;                  // rows of x
  int64_t rowsPerBlock;          // every block takes this many rows ...
  int64_t rowsRemainder;         // ... and the first rowsRemainder blocks one more
  uint32_t reduceChunk;          // dgamma reduction: columns per task, a multiple of 16
  uint32_t reduceTasks;          // dgamma reduction: ceil(N / reduceChunk)
  uint32_t reduceBlockDim;       // blocks of the dgamma reduction kernel (0 in forward)
  uint32_t reduceTasksPerBlock;  // every reduction block takes this many tasks ...
  uint32_t reduceTasksRemainder; // ... and the first reduceTasksRemainder blocks one more
  uint32_t bufferNum;            // buffers per queue: 2 (double buffering), or 1 when only a single-buffered
                       // whole-row tile fits (one read of x beats the split-row mode's two)
  uint32_t dxOutLate;  // add_rms_norm_grad single-pass, single-buffered, when a whole row fits only this
                       // way: dx_out is loaded into x's queue buffer after x's last read (no fourth queue)
  float gammaOffset;  // added to gamma as loaded (fp32): 0, or 1 for gemma_rms_norm[_grad]'s (1 + gamma)
  uint32_t shortRows;  // forward single-pass, many short rows (NormShortRows): each tile's row sums by
                       // whole-tile folds and a Gather, not by per-row instructions
  uint32_t packedRows;  // rms_norm forward, rows shorter than a 32-byte block (NormPackedRows): a tile of
                        // tileRows rows is one unpadded run in UB (rms_norm_packed.h)
};
