#include "rope_tiling.h"

#include <algorithm>

#include "rope_buffers.h"

namespace tiling {

bool RopeRotatesByCopy(uint32_t headDim, RopeMode mode) {
  return mode == ROPE_MODE_HALF && headDim / 2 * sizeof(float) % 32 == 0;
}

// The kernel's buffers (rope_buffers.h) for one row: what Init carves grows with the rows.
uint32_t RopeBytesPerRow(uint32_t headDim, DType dtype, RopeMode mode, uint32_t xBuffers) {
  return RopeBuffers(RowPitch(headDim, dtype), ElementBytes(dtype), xBuffers, RopeRotatesByCopy(headDim, mode),
                     mode == ROPE_MODE_TUTORIAL)
      .Total();
}

RopeTiling TileRope(const RopeProblem& p, const PlatformInfo& platform) {
  if (p.headDim == 0 || p.headDim % 2 != 0)
    throw TilingError("head_dim must be even and positive, got " + std::to_string(p.headDim));
  RopeTiling t{};
  RopeTilingData& d = t.data;
  d.headDim = p.headDim;
  d.rowPitch = RowPitch(p.headDim, p.dtype);
  d.rotaryMode = p.mode;
  d.backward = p.backward ? 1 : 0;
  d.rotateByCopy = RopeRotatesByCopy(p.headDim, p.mode) ? 1 : 0;
  d.xBuffers = 2;
  d.tileLines = 1;
  d.xRowElems = p.rowElems != 0 ? p.rowElems : p.headDim;
  if (d.xRowElems < p.headDim)
    throw TilingError("rows of " + std::to_string(d.xRowElems) + " elements cannot hold head_dim " +
                      std::to_string(p.headDim));
  t.tilingKey = p.mode;

  int64_t xStride = 1, rStride = 1;
  for (int k = 2; k >= 0; --k) {
    if (p.rDims[k] != 1 && p.rDims[k] != p.xDims[k])
      throw TilingError("cos/sin dim " + std::to_string(k) + " is " + std::to_string(p.rDims[k]) +
                        "; it must be 1 or match x's " + std::to_string(p.xDims[k]));
    d.xDims[k] = p.xDims[k];
    d.xStrides[k] = xStride;
    d.rStrides[k] = p.rDims[k] == 1 ? 0 : rStride;
    xStride *= p.xDims[k];
    rStride *= p.rDims[k];
  }
  d.xRows = xStride;
  d.rRows = rStride;

  // Tile along the innermost dim where cos/sin vary, so a tile's cos/sin rows are contiguous.
  int axis = -1;
  for (int k = 2; k >= 0 && axis < 0; --k)
    if (d.rStrides[k] != 0 && d.xDims[k] > 1) axis = k;
  for (int k = 2; k >= 0 && axis < 0; --k)
    if (d.xDims[k] > 1) axis = k;
  if (axis < 0) axis = 2;
  d.tileAxis = uint32_t(axis);
  d.lineAxes[0] = axis == 0 ? 1 : 0;
  d.lineAxes[1] = axis == 2 ? 1 : 2;
  d.sharedLines = 1;
  for (int k = 0; k < 2; ++k) {
    d.lineVaries[k] = d.rStrides[d.lineAxes[k]] != 0 ? 1 : 0;
    if (!d.lineVaries[k]) d.sharedLines *= d.xDims[d.lineAxes[k]];
  }

  const uint32_t rowBytes = RopeBytesPerRow(p.headDim, p.dtype, p.mode);
  const uint32_t maxRows = std::min<uint32_t>(platform.UbBudget() / rowBytes, kMaxCopyBlockCount);
  if (maxRows == 0)
    throw TilingError("head_dim " + std::to_string(p.headDim) + " needs " + std::to_string(rowBytes) +
                      " bytes of UB per row, more than the " + std::to_string(platform.UbBudget()) + "-byte budget");
  if (d.xRows == 0) return t;  // empty: blockDim 0

  // Enough tiles to give every core work, but never more rows than fit in UB.
  const int64_t axisLen = d.xDims[axis];
  const int64_t lines = d.xRows / axisLen / d.sharedLines;  // lines with their own cos/sin
  const int64_t tilesWanted = (platform.vectorCores + lines - 1) / lines;
  const int64_t rowsForBalance = (axisLen + tilesWanted - 1) / tilesWanted;
  d.tileRows = uint32_t(std::max<int64_t>(1, std::min<int64_t>(maxRows, rowsForBalance)));
  // The shortest tile that keeps the same number of tasks on the busiest core: its rows, and so the
  // launch's time, drop where the tasks did not divide evenly (4096 rows on 48 cores: 3 x 29, not 3 x 33).
  const int64_t rounds =
      (lines * ((axisLen + d.tileRows - 1) / d.tileRows) + platform.vectorCores - 1) / platform.vectorCores;
  const int64_t roundTiles = rounds * platform.vectorCores / lines;  // tiles per line the rounds hold
  d.tileRows = uint32_t((axisLen + roundTiles - 1) / roundTiles);
  // A tile shrunk for balance leaves UB spare: fill it with more lines sharing the tile's cos/sin
  // (heads), so each vector instruction covers them all and pays its start and barrier once, in
  // groups as even as the line count allows.
  const int64_t fitLines = std::min<int64_t>(d.sharedLines, maxRows / d.tileRows);
  const int64_t groups = (d.sharedLines + fitLines - 1) / fitLines;
  d.tileLines = uint32_t((d.sharedLines + groups - 1) / groups);
  // Where UB is still spare, a third x and y buffer lets the loads run two tiles ahead.
  const uint64_t tileRowsAll = uint64_t(d.tileRows) * d.tileLines;
  d.xBuffers = tileRowsAll * RopeBytesPerRow(p.headDim, p.dtype, p.mode, 3) <= platform.UbBudget() ? 3 : 2;
  d.tilesPerLine = uint32_t((axisLen + d.tileRows - 1) / d.tileRows);
  d.taskCount = lines * d.tilesPerLine;
  t.blockDim = uint32_t(std::min<int64_t>(platform.vectorCores, d.taskCount));
  d.tasksPerBlock = d.taskCount / t.blockDim;
  d.tasksRemainder = d.taskCount % t.blockDim;
  return t;
}

ApplyRopeTiling TileApplyRope(const RopeProblem& query, const RopeProblem& key, const PlatformInfo& platform) {
  const RopeTiling q = TileRope(query, platform), k = TileRope(key, platform);
  ApplyRopeTiling t{{q.data, k.data}, std::max(q.blockDim, k.blockDim), query.mode};
  // Each part keeps its tiles but spreads its tasks over all the launch's blocks; key's remainder
  // goes to the last blocks, so a block rarely takes both parts' extra task.
  for (RopeTilingData* d : {&t.data.query, &t.data.key}) {
    d->tasksPerBlock = t.blockDim == 0 ? 0 : d->taskCount / t.blockDim;
    d->tasksRemainder = t.blockDim == 0 ? 0 : d->taskCount % t.blockDim;
  }
  return t;
}

}  // namespace tiling
