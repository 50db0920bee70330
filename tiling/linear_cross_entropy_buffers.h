// The fused linear cross-entropy kernels' buffers, in bytes, written once: the kernels' Init carves them in this
// order (linear_cross_entropy_cube.h, linear_cross_entropy_vector.h) and the tiling holds their sums to L1, L0 and UB
// (linear_cross_entropy_tiling.cpp). Plain arithmetic shared by the host and the kernels.
#pragma once
#include <cstdint>

#include "linear_cross_entropy_tiling_data.h"

#ifdef __aicore__
#define LCE_BUFFERS_FN __aicore__ inline constexpr
#else
#define LCE_BUFFERS_FN inline constexpr
#endif

// Rows of one AIV: half a block.
constexpr uint32_t kLceHalf = uint32_t(kLceBlock) / 2;
// fp32 lanes of one 32-byte block (a per-row value spread over a block by Brcb).
constexpr uint32_t kLceBlockFloats = 8;

// The AIC's L1 tiles and L0 buffers for elements of `bytes` bytes.
struct LceCubeBuffers {
  uint32_t scoreA, scoreB;      // a kChunk-column chunk of the fixed / moving rows
  uint32_t aBuffers, bBuffers;  // how many of each: the forward's pairs load 1 + 2 per chunk and keep loading
                                // 2-3 chunks ahead while a pair goes out (Fixpipe holds both L0C tiles); 8 in
                                // all, the TPipe's event ids for one pipe pair (MTE2 -> MTE1)
  uint32_t grad;  // backward: a G segment [kLceBlock, segBlocks * kLceBlock]
  uint32_t moving;  // backward: the segment's moving rows, gemmChunk columns
  uint32_t l0a, l0b, l0c;  // the Mmad operands (two each) and results (two)
  LCE_BUFFERS_FN uint32_t L1() const { return aBuffers * scoreA + bBuffers * scoreB + grad + moving; }
};
LCE_BUFFERS_FN uint32_t LceMax(uint32_t a, uint32_t b) { return a > b ? a : b; }
LCE_BUFFERS_FN LceCubeBuffers LceCubeBuffersOf(uint32_t bytes, uint32_t kChunk, uint32_t segBlocks, uint32_t gemmChunk,
                                               uint32_t gemmK, bool backward) {
  const uint32_t b = uint32_t(kLceBlock), seg = segBlocks * b;
  return {b * kChunk * bytes,
          b * kChunk * bytes,
          backward ? 2u : 3u,
          backward ? 2u : 5u,
          backward ? b * seg * bytes : 0,
          backward ? seg * gemmChunk * bytes : 0,
          LceMax(b * kChunk, backward ? b * gemmK : 0) * bytes,
          LceMax(b * kChunk, backward ? gemmK * gemmChunk : 0) * bytes,
          b * LceMax(b, backward ? gemmChunk : 0) * 4};
}

// An AIV's UB buffers: kLceHalf rows of a score block at most.
struct LceVectorBuffers {
  uint32_t score;  // each of two: a score block's rows, fp32 [kLceHalf, kLceBlock]
  uint32_t work;  // softcap's tanh, G before its cast
  uint32_t stage;  // G in the input dtype on its way out, the accumulator's rows on theirs; before G's cast
                   // (and in the forward) the fp32 products with the class weights
  uint32_t fold;  // the row reductions' lane-wise fold [kLceHalf, 64]
  uint32_t stats;  // per-row statistics, kLceStats lanes of kLceHalf
  uint32_t blocks;  // two sets of per-row 32-byte blocks (Brcb)
  uint32_t columns;  // per column of a block, [kLceBlock] each: lce_vec::Column
  uint32_t targets;  // the rows' or the columns' targets (int64)
  uint32_t vocabIn;  // a block's bias values in the input dtype, before they are widened
  uint32_t biasOut;  // backward vocab tasks: the rows' grad_bias in the input dtype, on its way out
  LCE_BUFFERS_FN uint32_t Total() const {
    return 2 * score + work + stage + fold + stats + blocks + columns + targets + vocabIn + biasOut;
  }
};
namespace lce_vec {
// columnBuf_'s per-column values: backward vocab tasks' moving tokens' lse and three scales; token tasks' bias
// and class weights of the block's vocabulary rows (fp32).
enum Column : uint32_t { kLseCol, kSoftmaxCol, kTargetCol, kUniformCol, kBiasCol, kWeightCol, kColumns };
// statBuf_'s rows of kLceHalf floats: the running max (two: old and new alternate), the running sum, the target's
// logit, the sum of the logits, a row reduction, the rescale factor; backward token tasks: lse and the three scales;
// backward vocab tasks: the rows' bias, class weights and grad_bias sum.
enum Stat : uint32_t {
  kMax0,
  kMax1,
  kSum,
  kTarget,
  kLogitSum,
  kRed,
  kAlpha,
  kLse,
  kSoftmax,
  kTargetScale,
  kUniform,
  kBiasRow,
  kWeightRow,
  kBiasGrad,
  kStats
};
}  // namespace lce_vec
LCE_BUFFERS_FN LceVectorBuffers LceVectorBuffersOf() {
  const uint32_t h = kLceHalf, b = uint32_t(kLceBlock);
  return {h * b * 4,
          h * b * 4,
          h * b * 4,
          h * 64 * 4,
          lce_vec::kStats * h * 4,
          2 * h * kLceBlockFloats * 4,
          lce_vec::kColumns * b * 4,
          b * 8,
          b * 4,
          h * 4};
}
