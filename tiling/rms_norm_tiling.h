// Host tiling for RMSNorm (rms_norm, add_rms_norm and their backward): a pure function of
// (rows, hidden, dtypes, direction, platform). The byte counts below are exactly what the kernels
// ask of TPipe, so a tiling that passes the budget check never overflows UB.
#pragma once
#include "rms_norm_tiling_data.h"
#include "platform.h"

namespace tiling {

struct NormProblem {
  int64_t rows;       // product of x's leading (not normalized) dims
  uint32_t hidden;    // product of gamma's dims
  DType xDtype;       // x, y, dy, dx (and x1, x2, the x output of add_rms_norm)
  DType gammaDtype;   // gamma and dgamma
  bool add;           // add_rms_norm (forward: second input and x output; backward: dx_out input)
  bool backward;
  float epsilon;
  float gammaOffset;  // the weight is (gammaOffset + gamma): 1 for gemma_rms_norm[_grad], else 0
  bool gated = false; // gated_rms_norm: y is multiplied by silu(z), z a third input of x's shape and dtype
};

struct NormTiling {
  NormTilingData data;
  uint32_t blockDim;        // row kernel; 0 when there is nothing to launch
  NormTilingKey tilingKey;  // single-pass or split-row
  uint32_t reduceBlockDim;  // backward: blocks of the dgamma reduction; 0 in forward
};

// Rows of the sum-of-squares (and rstd) scratch per tile are capped here.
constexpr uint32_t kNormMaxTileRows = NORM_MAX_TILE_ROWS;
// Columns per task of the dgamma reduction kernel.
constexpr uint32_t kNormReduceChunk = 4096;

inline uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }
// Floats of ReduceSum's scratch for `count` inputs: one per 64-float repeat, in whole blocks, plus a block.
inline uint32_t NormReduceTmpElems(uint32_t count) { return AlignUp((count + 63) / 64, 8) + 8; }

// Forward rows summed by whole-tile folds (NormTilingData::shortRows): a power-of-two row of 8 to
// kNormShortRowMax elements with no padding in UB, so each fold level's halves are 32-byte aligned.
constexpr uint32_t kNormShortRowMax = 128;
bool NormShortRows(const NormProblem& p);
// Forward rms_norm rows shorter than a 32-byte block, of a power-of-two length (1, 2, 4; 8 for 16-bit x):
// DataCopyPad would pad each to a block, so tiles are copied and computed as one unpadded run instead.
bool NormPackedRows(const NormProblem& p);
// UB bytes of the packed-rows kernel with tiles of `tileRows` rows (a multiple of 8).
uint32_t NormPackedBytes(const NormProblem& p, uint32_t tileRows);
// UB bytes the row kernel uses with tiles of `tileRows` full rows (single-pass); `dxOutLate`: backward add
// without dx_out's queue (NormTilingData::dxOutLate); with NormShortRows, the folds' buffers too.
uint32_t NormSinglePassBytes(const NormProblem& p, uint32_t tileRows, uint32_t bufferNum = 2, bool dxOutLate = false);
// UB bytes the row kernel uses with one row in chunks of `chunk` columns (split-row).
uint32_t NormSplitRowBytes(const NormProblem& p, uint32_t chunk);
// UB bytes of the dgamma reduction kernel with `chunk` columns per task.
uint32_t NormReduceBytes(DType gammaDtype, uint32_t chunk);

NormTiling TileNorm(const NormProblem& problem, const PlatformInfo& platform);

}  // namespace tiling
