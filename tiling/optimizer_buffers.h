// The AdamW kernel's UB buffers in bytes, written once: the kernel's Init carves them (csrc/kernels/optimizer.cpp)
// and the tiling sizes its tiles by their sum (AdamWBytesPerElem), so the two cannot disagree.
#pragma once
#include <cstdint>

#ifdef __aicore__
#define ADAM_W_BUFFERS_FN __aicore__ inline constexpr
#else
#define ADAM_W_BUFFERS_FN inline constexpr
#endif

// Every queue is double-buffered: tile i + 1 loads while tile i is computed.
constexpr int32_t kAdamWBufferNum = 2;

// Tiles of `elems` elements: the parameter and grad (elemBytes each) and the fp32 states (one queue holds a tile
// of each side by side), in and out; the fp32
// copies a 16-bit parameter and grad are widened into; two fp32 scratch tiles.
// With an fp32 master copy the master is one more state (read and written) and the parameter is only written.
struct AdamWUb {
  uint32_t param;    // one tile of the parameter (or grad) in its dtype
  uint32_t state;    // one fp32 tile: m, v, the amsgrad maximum, the master, a widened copy, a scratch
  uint32_t states;   // states read and written: m, v (2), + the amsgrad maximum, + the master
  uint32_t widened;  // 16-bit: 2 (param and grad), 1 with a master (grad); 0 for fp32 (computed where they landed)
  uint32_t paramsIn; // tiles of param dtype read: grad, and the parameter unless a master stands for it
  ADAM_W_BUFFERS_FN uint32_t In() const { return paramsIn * param + states * state; }
  ADAM_W_BUFFERS_FN uint32_t Out() const { return param + states * state; }
  ADAM_W_BUFFERS_FN uint32_t Total() const { return kAdamWBufferNum * (In() + Out()) + (widened + 2) * state; }
};
ADAM_W_BUFFERS_FN AdamWUb AdamWBuffers(uint32_t elems, uint32_t elemBytes, bool amsgrad, bool master = false) {
  return {elems * elemBytes, elems * 4, 2u + (amsgrad ? 1u : 0u) + (master ? 1u : 0u),
          elemBytes == 4 ? 0u : (master ? 1u : 2u), master ? 1u : 2u};
}

// foreach_norm's tiles of `elems` elements: x in its dtype (double-buffered), its fp32 copy (16-bit x) and the fp32
// |x| or x^2 the tile is reduced from; beside them, fixed: the running partial, the tile's reduction, the slot out.
struct ForeachNormUb {
  uint32_t x;        // one tile of x
  uint32_t state;    // one fp32 tile
  uint32_t widened;  // 1 for 16-bit x, 0 for fp32
  ADAM_W_BUFFERS_FN uint32_t Total() const { return kAdamWBufferNum * x + (widened + 1) * state; }
};
ADAM_W_BUFFERS_FN ForeachNormUb ForeachNormBuffers(uint32_t elems, uint32_t elemBytes) {
  return {elems * elemBytes, elems * 4, elemBytes == 4 ? 0u : 1u};
}
constexpr uint32_t kForeachNormFixedBytes = 3 * 32 + 256;  // partial, reduction, slot; ReduceSum's scratch

// foreach_clip_by_total_norm's tiles of `elems` elements: x in and out in its dtype (double-buffered) and, for 16-bit
// x, its fp32 copy scaled; beside them, fixed: the chunk of norms (a 32-byte slot each, and its fp32 copy), the total.
struct ForeachClipUb {
  uint32_t x;        // one tile of x
  uint32_t state;    // one fp32 tile
  uint32_t widened;  // 1 for 16-bit x, 0 for fp32 (scaled from the in tile into the out tile)
  ADAM_W_BUFFERS_FN uint32_t Total() const { return 2 * kAdamWBufferNum * x + widened * state; }
};
ADAM_W_BUFFERS_FN ForeachClipUb ForeachClipBuffers(uint32_t elems, uint32_t elemBytes) {
  return {elems * elemBytes, elems * 4, elemBytes == 4 ? 0u : 1u};
}
// the norms' slots (32 bytes each), their fp32 copy (at most 16 floats a slot), the total and its copy out
ADAM_W_BUFFERS_FN uint32_t ForeachClipFixedBytes(uint32_t chunk) { return chunk * 32 + chunk * 16 * 4 + 2 * 32; }
