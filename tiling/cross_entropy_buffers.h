// The cross-entropy kernels' UB buffers in bytes, written once: the kernels' Init carves them
// (csrc/kernels/cross_entropy*.cpp) and the tiling sizes its chunks by their sum (cross_entropy_tiling.cpp).
#pragma once
#include <cstdint>

#ifdef __aicore__
#define CROSS_ENTROPY_BUFFERS_FN __aicore__ inline constexpr
#else
#define CROSS_ENTROPY_BUFFERS_FN inline constexpr
#endif

// The chunk queues are double-buffered: chunk i + 1 loads while chunk i is computed and chunk i - 1 stored.
constexpr int32_t kCrossEntropyBufferNum = 2;
// Rows of per-row results gathered in UB before one copy to GM.
constexpr uint32_t kCrossEntropyStageRows = 64;
// Floats of the scalar scratch: 32-byte slots for ReduceMax / sum results and the Exp / Ln of one value.
constexpr uint32_t kCrossEntropyScalarFloats = 32;

struct CrossEntropyUb {
  uint32_t tile;       // one buffer of the in / out queues: a chunk in the input dtype
  uint32_t widened;    // fp32 copy of a 16-bit chunk (0 for fp32)
  uint32_t work;       // fp32 chunk: exp, log-probabilities, the gradient
  uint32_t weight;     // fp32 weight chunk (label smoothing with a weight), else 0
  uint32_t reduceTmp;  // ReduceMax / ReduceSum scratch: two floats per 64-lane repeat, and a repeat more
  uint32_t scalars;    // kCrossEntropyScalarFloats floats
  uint32_t stage;      // kCrossEntropyStageRows rows of per-row results (forward)
  CROSS_ENTROPY_BUFFERS_FN uint32_t Total() const {
    return 2 * kCrossEntropyBufferNum * tile + widened + work + weight + reduceTmp + scalars + stage;
  }
};

// elems: a chunk's UB elements (a multiple of 64).
CROSS_ENTROPY_BUFFERS_FN CrossEntropyUb CrossEntropyBuffers(uint32_t elems, uint32_t elemBytes, bool weightChunks) {
  return {elems * elemBytes,
          elemBytes == 4 ? 0u : elems * 4u,
          elems * 4u,
          weightChunks ? elems * 4u : 0u,
          ((elems + 63) / 64 * 2 + 64) * 4u,
          kCrossEntropyScalarFloats * 4u,
          kCrossEntropyStageRows * 4u * 4u};
}
