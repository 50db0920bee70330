// Tiling data shared by the host tiling (stream_copy_tiling.h) and the streaming copy kernel
// (csrc/kernels/stream_copy.cpp): y = x over `elems` 2-byte elements, in tiles of tileElems.
#pragma once
#include <cstdint>

struct StreamCopyTilingData {
  int64_t elems;           // 2-byte elements to copy (the tensor's bytes / 2)
  int64_t tileCount;       // ceil(elems / tileElems)
  int64_t tilesPerBlock;   // every block copies this many consecutive tiles ...
  int64_t tilesRemainder;  // ... and the first tilesRemainder blocks one more
  uint32_t tileElems;      // elements per tile (a whole number of 32-byte blocks)
  uint32_t bufferNum;      // buffers per queue: 2 overlaps load, copy and store; 1 serialises them
};
