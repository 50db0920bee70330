#include "swiglu_tiling.h"

#include <algorithm>
#include <limits>

#include "swiglu_buffers.h"

namespace tiling {

namespace {
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignDown(int64_t a, int64_t b) { return a / b * b; }
}  // namespace

// The kernels' buffers (swiglu_buffers.h) for one element / row: what Init carves grows with them.
uint32_t SwigluBytesPerElem(DType dtype, bool backward) {
  return SwigluBuffers(1, ElementBytes(dtype), backward).Total();
}

uint32_t SwigluPackedBytesPerRow(DType dtype) { return SwigluPackedBuffers(1, ElementBytes(dtype)).Total(); }

namespace {
// Forward with inner 1 (SwiGLU over a last dim of 2): rows are (a, b) pairs, 2 * eb bytes, so the row tiling
// would pad each half to a 32-byte block. Tiles of whole blocks of 16 rows, a multiple of the cores in number.
void TileSwigluPacked(SwigluTiling& t, const SwigluProblem& p, const PlatformInfo& platform) {
  SwigluTilingData& d = t.data;
  const int64_t cores = platform.vectorCores;
  // at most what fits in UB, and what one Gather (count form: 255 full repeats of 256 bytes) de-interleaves
  const int64_t perRepeat = 256 / ElementBytes(p.dtype);
  const int64_t fit = std::min<int64_t>(platform.UbBudget() / SwigluPackedBytesPerRow(p.dtype), 255 * perRepeat);
  const int64_t most = AlignDown(fit, 16);
  if (most < 16) throw TilingError(std::string(platform.name) + " has no room for 16 packed SwiGLU rows");
  const int64_t tiles = CeilDiv(CeilDiv(p.outer, most), cores) * cores;
  d.tileRows = uint32_t(std::min(most, CeilDiv(CeilDiv(p.outer, tiles), 16) * 16));
  d.rowTiles = CeilDiv(p.outer, d.tileRows);
  d.tileCols = 1;
  d.colTiles = 1;
  d.tilePitch = RowPitch(1, p.dtype);
  d.packed = 1;
  d.taskCount = d.rowTiles;
  t.blockDim = uint32_t(std::min<int64_t>(cores, d.taskCount));
  d.tasksPerBlock = d.taskCount / t.blockDim;
  d.tasksRemainder = d.taskCount % t.blockDim;
  t.tilingKey = SWIGLU_KEY_FORWARD_PACKED;
}
}  // namespace

SwigluTiling TileSwiglu(const SwigluProblem& p, const PlatformInfo& platform) {
  if (p.outer < 0 || p.inner < 0)
    throw TilingError("outer and inner must be >= 0, got " + std::to_string(p.outer) + " and " +
                      std::to_string(p.inner));
  const uint32_t eb = ElementBytes(p.dtype);
  // DataCopyPad strides between rows are uint32 bytes; a row of x spans 2 * inner elements.
  if (p.inner > int64_t(std::numeric_limits<uint32_t>::max() / (2 * eb)))
    throw TilingError("inner size " + std::to_string(p.inner) + " exceeds the 2^32-byte row limit of DataCopyPad");
  SwigluTiling t{};
  SwigluTilingData& d = t.data;
  d.outer = p.outer;
  d.inner = p.inner;
  d.backward = p.backward ? 1 : 0;
  if (p.outer == 0 || p.inner == 0) {  // empty: blockDim 0
    t.tilingKey = p.backward ? SWIGLU_KEY_BACKWARD_WHOLE_ROWS : SWIGLU_KEY_FORWARD_WHOLE_ROWS;
    return t;
  }

  if (!p.backward && p.inner == 1) {
    TileSwigluPacked(t, p, platform);
    return t;
  }
  const int64_t perBlock = 32 / eb;  // elements per 32-byte block
  const uint32_t elemBytes = SwigluBytesPerElem(p.dtype, p.backward);
  const int64_t maxCols = AlignDown(platform.UbBudget() / elemBytes, perBlock);  // one tile row at most
  const int64_t cores = platform.vectorCores;
  if (maxCols < perBlock || cores < 1)
    throw TilingError(std::string(platform.name) + " has no room for one 32-byte block of SwiGLU columns");

  // Columns: whole rows when a row fits in UB, else the fewest even column tiles that fit; with fewer
  // rows than cores, rows of at least kSwigluMinSplitCols columns are split further to feed the cores.
  int64_t colTiles = CeilDiv(p.inner, maxCols);  // maxCols is block-aligned, so inner <= maxCols fits padded
  if (p.outer < cores) {
    const int64_t forCores = CeilDiv(cores, p.outer);
    colTiles = std::max(colTiles, std::min(forCores, p.inner / kSwigluMinSplitCols));
  }
  if (colTiles <= 1) {
    colTiles = 1;
    d.tileCols = uint32_t(p.inner);
  } else {
    d.tileCols = uint32_t(std::min(maxCols, CeilDiv(CeilDiv(p.inner, colTiles), perBlock) * perBlock));
    colTiles = CeilDiv(p.inner, d.tileCols);
  }
  d.colTiles = colTiles;
  d.tilePitch = RowPitch(d.tileCols, p.dtype);

  // Rows: as many as fit in UB, but few enough that every core gets a task.
  const int64_t maxRows =
      std::min<int64_t>(platform.UbBudget() / (int64_t(d.tilePitch) * elemBytes), kMaxCopyBlockCount);
  const int64_t rowTilesWanted = CeilDiv(cores, colTiles);
  const int64_t rowsForBalance = CeilDiv(p.outer, rowTilesWanted);
  d.tileRows = uint32_t(std::max<int64_t>(1, std::min(maxRows, rowsForBalance)));
  d.rowTiles = CeilDiv(p.outer, d.tileRows);

  d.taskCount = d.rowTiles * d.colTiles;
  t.blockDim = uint32_t(std::min<int64_t>(cores, d.taskCount));
  d.tasksPerBlock = d.taskCount / t.blockDim;
  d.tasksRemainder = d.taskCount % t.blockDim;
  const bool split = d.colTiles > 1;
  t.tilingKey = p.backward ? (split ? SWIGLU_KEY_BACKWARD_SPLIT_ROWS : SWIGLU_KEY_BACKWARD_WHOLE_ROWS)
                           : (split ? SWIGLU_KEY_FORWARD_SPLIT_ROWS : SWIGLU_KEY_FORWARD_WHOLE_ROWS);
  return t;
}

}  // namespace tiling
