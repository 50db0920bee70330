// The SwiGLU kernels' UB buffers in bytes, written once: the kernels' Init carves them (csrc/kernels/swiglu.cpp,
// swiglu_packed.h) and the tiling sizes its tiles by their sum (SwigluBytesPerElem, SwigluPackedBytesPerRow,
// swiglu_tiling.cpp), so the two cannot disagree. Plain arithmetic shared by the host and the kernels:
// __aicore__ where a kernel header defined it.
#pragma once
#include <cstdint>

#ifdef __aicore__
#define SWIGLU_BUFFERS_FN __aicore__ inline constexpr
#else
#define SWIGLU_BUFFERS_FN inline constexpr
#endif

// Every queue is double-buffered: tile i + 1 loads while tile i is computed.
constexpr int32_t kSwigluBufferNum = 2;

// The row kernels' buffers for tiles of `elems` elements of `elemBytes` bytes: each queue's buffers (kSwigluBufferNum
// of them), the fp32 copies 16-bit inputs are widened into (fp32 inputs are computed where they landed), and the
// backward's sigmoid and the ones it is divided out of (fp32 in any dtype).
struct SwigluUb {
  uint32_t tile;      // forward: A, B in, y out; backward: dy, A, B in, dA, dB out
  uint32_t queues;    // 3 forward, 5 backward
  uint32_t widened;   // each fp32 copy: forward A, B, y; backward dy, A, B, dB
  uint32_t copies;    // 3 forward, 4 backward; 0 for fp32 inputs
  uint32_t sigmoid;   // backward: sigmoid(A); as much again for the ones
  SWIGLU_BUFFERS_FN uint32_t Total() const { return queues * kSwigluBufferNum * tile + copies * widened + 2 * sigmoid; }
};
SWIGLU_BUFFERS_FN SwigluUb SwigluBuffers(uint32_t elems, uint32_t elemBytes, bool backward) {
  const uint32_t copies = elemBytes == 4 ? 0 : backward ? 4 : 3;
  return {elems * elemBytes, backward ? 5u : 3u, elems * 4, copies, backward ? elems * 4 : 0};
}

// The packed kernel's (inner 1, forward) buffers for tiles of `rows` (a, b) pairs: the pairs in and y out (each
// kSwigluBufferNum buffers), a and b de-interleaved, their fp32 copies and the result's (16-bit dtypes), the
// gather offsets.
struct SwigluPackedUb {
  uint32_t pairs, out, half;  // 2 rows, 1 row, 1 row in the input dtype
  uint32_t widened;           // each of 3 fp32 copies (0 of them for fp32)
  uint32_t offsets;
  bool widen;
  SWIGLU_BUFFERS_FN uint32_t Total() const {
    return kSwigluBufferNum * (pairs + out) + 2 * half + (widen ? 3 * widened : 0) + offsets;
  }
};
SWIGLU_BUFFERS_FN SwigluPackedUb SwigluPackedBuffers(uint32_t rows, uint32_t elemBytes) {
  return {2 * rows * elemBytes, rows * elemBytes, rows * elemBytes, rows * 4, rows * 4, elemBytes != 4};
}
