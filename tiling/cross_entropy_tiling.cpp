#include "cross_entropy_tiling.h"

#include <algorithm>
#include <limits>
#include <string>

#include "cross_entropy_buffers.h"

namespace tiling {

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

uint32_t CrossEntropyMaxChunk(DType dtype, bool weightChunks, const PlatformInfo& platform) {
  const uint32_t eb = ElementBytes(dtype);
  // Total() is affine in the chunk: its per-64-column step and fixed part give the widest chunk directly.
  const uint32_t fixed = CrossEntropyBuffers(0, eb, weightChunks).Total();
  const uint32_t per64 = CrossEntropyBuffers(64, eb, weightChunks).Total() - fixed;
  if (platform.UbBudget() < fixed + per64)
    throw TilingError(std::string(platform.name) + " has no room for 64 cross-entropy columns");
  return (platform.UbBudget() - fixed) / per64 * 64;
}

CrossEntropyTiling TileCrossEntropy(const CrossEntropyProblem& p, const PlatformInfo& platform) {
  if (p.rows < 0 || p.cols < 1)
    throw TilingError("rows must be >= 0 and cols >= 1, got " + std::to_string(p.rows) + " and " +
                      std::to_string(p.cols));
  CrossEntropyTiling t{};
  CrossEntropyTilingData& d = t.data;
  d.rows = p.rows;
  d.cols = p.cols;
  d.ignoreIndex = p.ignoreIndex;
  d.hasWeight = p.hasWeight ? 1 : 0;
  // weight chunks serve only the smoothing term sum_c w[c] log_prob[c] (forward) and b * w[c] (backward)
  d.weightChunks = p.hasWeight && p.labelSmoothing > 0.0f ? 1 : 0;
  d.reduction = p.reduction;
  d.labelSmoothing = p.labelSmoothing;
  d.lseSquareScale = p.lseSquareScale;
  d.returnZloss = p.returnZloss ? 1 : 0;
  d.backward = p.backward ? 1 : 0;
  t.tilingKey = p.backward ? CROSS_ENTROPY_KEY_BACKWARD : CROSS_ENTROPY_KEY_FORWARD;

  // Chunks: the whole row when it fits, else the fewest equal chunks (multiples of 64 columns) that do.
  const int64_t most = CrossEntropyMaxChunk(p.dtype, d.weightChunks != 0, platform);
  if (p.cols <= most) {
    d.chunkCols = uint32_t(p.cols);
    d.chunkCount = 1;
  } else {
    const int64_t chunks = CeilDiv(p.cols, most);
    d.chunkCols = uint32_t(std::min(most, CeilDiv(CeilDiv(p.cols, chunks), 64) * 64));
    d.chunkCount = uint32_t(CeilDiv(p.cols, d.chunkCols));
  }
  d.chunkElems = uint32_t(CeilDiv(d.chunkCols, 64) * 64);
  if (p.rows == 0) return t;  // empty: blockDim 0

  // Rows: consecutive runs, one per block, as many blocks as rows allow.
  const int64_t cores = std::max<int64_t>(1, platform.vectorCores);
  t.blockDim = uint32_t(std::min<int64_t>(cores, p.rows));
  d.rowsPerBlock = p.rows / t.blockDim;
  d.rowsRemainder = p.rows % t.blockDim;
  return t;
}

}  // namespace tiling
