// Host tiling of the streaming copy: tiles of up to 32 KB (>= 16 KB per DataCopy reaches peak
// MTE bandwidth on A2), two queues of bufferNum tiles within the UB budget, blocks as asked.
#pragma once
#include <algorithm>
#include <cstdint>

#include "platform.h"
#include "stream_copy_tiling_data.h"

namespace tiling {

struct StreamCopyTiling {
  StreamCopyTilingData data;
  uint32_t blockDim;  // 0: nothing to copy
};

// blockDim 0: one block per vector core of the platform; more blocks than tiles are not launched.
inline StreamCopyTiling TileStreamCopy(int64_t elems, uint32_t bufferNum, uint32_t blockDim, const PlatformInfo& p) {
  if (bufferNum < 1 || bufferNum > 2) throw TilingError("buffer_num must be 1 or 2, got " + std::to_string(bufferNum));
  constexpr uint32_t kMaxTileBytes = 32 * 1024;
  const uint32_t budgetTile = p.UbBudget() / (2 * bufferNum) / 32 * 32;  // an input and an output queue
  const uint32_t tileElems = std::min(kMaxTileBytes, budgetTile) / 2;
  StreamCopyTiling t{};
  t.data.elems = elems;
  t.data.tileElems = tileElems;
  t.data.bufferNum = bufferNum;
  t.data.tileCount = (elems + tileElems - 1) / tileElems;
  const int64_t want = blockDim ? blockDim : p.vectorCores;
  t.blockDim = static_cast<uint32_t>(std::min<int64_t>(want, t.data.tileCount));
  if (t.blockDim == 0) return t;
  t.data.tilesPerBlock = t.data.tileCount / t.blockDim;
  t.data.tilesRemainder = t.data.tileCount % t.blockDim;
  return t;
}

}  // namespace tiling
