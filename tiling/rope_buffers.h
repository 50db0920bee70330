// The RoPE kernel's UB buffers in bytes, written once: the kernel's Init carves them (csrc/kernels/rope.cpp) and the
// tiling sizes its tiles by their sum per row (RopeBytesPerRow, rope_tiling.cpp), so the two cannot disagree. Plain
// arithmetic shared by the host and the kernel: __aicore__ where a kernel header defined it.
#pragma once
#include <cstdint>

#ifdef __aicore__
#define ROPE_BUFFERS_FN __aicore__ inline constexpr
#else
#define ROPE_BUFFERS_FN inline constexpr
#endif

// cos and sin are double-buffered; x and y take the tiling's xBuffers (2 or 3).
constexpr int32_t kRopeTableBuffers = 2;

// The buffers for tiles of `elems` elements of `elemBytes` bytes: x in and y out (xBuffers each), cos and sin in
// (kRopeTableBuffers each); for 16-bit dtypes the fp32 accumulator and widened x, cos, sin; unless the halves are
// rotated by copies, the gather offsets and signs (and the tutorial's even-lane offsets).
struct RopeUb {
  uint32_t tile;              // one buffer of a queue
  uint32_t xBuffers;
  uint32_t widened, copies;   // each fp32 buffer, and how many (4, or 0 for fp32)
  uint32_t table, tables;     // each gather table (offsets, signs, lanes), and how many (0, 2 or 3)
  ROPE_BUFFERS_FN uint32_t Total() const {
    return (2 * xBuffers + 2 * kRopeTableBuffers) * tile + copies * widened + tables * table;
  }
};
ROPE_BUFFERS_FN RopeUb RopeBuffers(uint32_t elems, uint32_t elemBytes, uint32_t xBuffers, bool rotateByCopy,
                                   bool tutorial) {
  return {elems * elemBytes,        xBuffers,  elems * 4,
          elemBytes == 4 ? 0u : 4u, elems * 4, rotateByCopy ? 0u : tutorial ? 3u : 2u};
}
