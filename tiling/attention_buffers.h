// The AIVs' UB buffers of the fused attention kernels, in bytes, written once: the kernels' Init carves them in
// this order (attention_vector.h, attention_grad_vector.h) and the tilings hold their sum to the UB budget
// (attention_tiling.cpp, attention_grad_tiling.cpp), so a buffer added here is counted by both. Plain arithmetic
// shared by the host and the kernels: __aicore__ where a kernel header defined it.
#pragma once
#include <cstdint>

#include "attention_tiling_data.h"

#ifdef __aicore__
#define ATTENTION_BUFFERS_FN __aicore__ inline constexpr
#else
#define ATTENTION_BUFFERS_FN inline constexpr
#endif

// Rows of one AIV at most (s1Block <= 128, halved): one repeat each, well under the 255 a call takes.
constexpr uint32_t kAttentionMaxRows = 64;
// fp32 lanes of one 32-byte block: a per-row value spread over a block (Brcb).
constexpr uint32_t kAttentionBlockFloats = 8;

namespace attention_vec {
// The forward's statBuf_ slots of kAttentionMaxRows floats: a row reduction, the rescale factors of the
// kAttentionPSlots blocks in flight, two scratch rows (the band's edges), keep; then per task in flight (as many as
// blocks: a task with a block in flight, and the one about to start) the running max (two, the old and the new
// alternate) and the running sum.
enum Stat : uint32_t { kRed, kAlpha0, kAlpha1, kAlpha2, kTmp0, kTmp1, kKeep, kTaskStats };
static_assert(kTmp0 - kAlpha0 == kAttentionPSlots, "a rescale slot per block in flight");
enum TaskStat : uint32_t { kMax0, kMax1, kSum, kPerTask };
constexpr uint32_t kStats = kTaskStats + kPerTask * kAttentionPSlots;
}  // namespace attention_vec

// AttentionTilingData::dropout: off; rows at any bit (S2 % 8 != 0); or rows of whole bytes (S2 % 8 == 0, so every
// row of every block starts at bit 0 of a byte: attention_dropout.h's one copy and one Gather a block).
enum AttentionDropoutMode : int32_t { kDropoutOff = 0, kDropoutBits = 1, kDropoutBytes = 2 };

// Bytes of one row of a dropout block's drop_mask in UB: `cols` keys span (shift + cols + 7) / 8 bytes at any bit
// shift, padded to the 32-byte blocks a copy writes (attention_dropout.h); of whole bytes, cols / 8 padded.
ATTENTION_BUFFERS_FN uint32_t AttentionDropoutRowBytes(uint32_t cols) { return ((cols + 14) / 8 + 31) / 32 * 32; }
ATTENTION_BUFFERS_FN uint32_t AttentionDropoutByteRowBytes(uint32_t cols) { return (cols / 8 + 31) / 32 * 32; }

// Dropout's buffers for `rows` rows of an s2b-key block in `mode` (AttentionDropout, attention_dropout.h):
// drop_mask's bytes and as fp32, the Gather offsets and the 2^-bit powers (8 bit shifts x s2b keys each; of whole
// bytes no offsets, powers one 32-byte block). The factors pass through the AIVs' bound buffer.
struct AttentionDropoutUb {
  uint32_t bytes, floats, offsets, powers;
  ATTENTION_BUFFERS_FN uint32_t Total() const { return bytes + floats + offsets + powers; }
};
ATTENTION_BUFFERS_FN AttentionDropoutUb AttentionDropoutBuffers(uint32_t rows, uint32_t s2b, int32_t mode) {
  const bool whole = mode == kDropoutBytes;
  const uint32_t rb = whole ? AttentionDropoutByteRowBytes(s2b) : AttentionDropoutRowBytes(s2b);
  return {rows * rb, rows * rb * 4, whole ? 0 : 8 * s2b * 4, whole ? 32 : 8 * s2b * 4};
}

// The forward AIV's rows: the first ceil(s1Block / 2) of a task's for AIV 0, the rest for AIV 1.
ATTENTION_BUFFERS_FN uint32_t AttentionVectorRows(uint32_t s1Block) { return (s1Block + 1) / 2; }

// The forward AIV's buffers for `rows` query rows, S blocks of `s2b` keys and P V rows `vPitch` floats apart.
struct AttentionVectorUb {
  uint32_t s;                // each of sQue_'s two: S of a block, fp32
  uint32_t bound;            // the mask bound, the folds, P
  uint32_t mask, maskHalf;   // atten_mask's bytes, and as half (maskFull; else unused)
  uint32_t o;                // O, accumulated in fp32
  uint32_t pv;               // P V's own buffer (pvBuffer; else P V comes through P's)
  uint32_t ramp, rowRamp;    // the column and row ramps
  uint32_t stats;            // the row statistics (attention_vec::Stat), one lane per row
  uint32_t blocks;           // two sets of per-row 32-byte blocks (Brcb)
  uint32_t outStats;         // the max / sum rows out, kAttentionStatLanes lanes each
  AttentionDropoutUb drop;  // dropout's (else unused)
  bool maskFull, dropout;
  // The bytes of all but P V's buffer, which the tiling adds where it still fits.
  ATTENTION_BUFFERS_FN uint32_t WithoutPv() const {
    return 2 * s + bound + (maskFull ? mask + maskHalf : 0) + o + ramp + rowRamp + stats + blocks + outStats +
           (dropout ? drop.Total() : 0);
  }
};
ATTENTION_BUFFERS_FN AttentionVectorUb AttentionVectorBuffers(uint32_t rows, uint32_t s2b, uint32_t vPitch,
                                                              bool maskFull, int32_t dropout) {
  const uint32_t outStatRows = (rows + 7) / 8 * 8;  // whole groups of 8 rows: Brcb and BlockReduce read them
  return {rows * s2b * 4,
          rows * s2b * 4,
          rows * s2b,
          rows * s2b * 2,
          rows * vPitch * 4,
          rows * vPitch * 4,
          s2b * 4,
          kAttentionMaxRows * 4,
          attention_vec::kStats * kAttentionMaxRows * 4,
          2 * kAttentionMaxRows * kAttentionBlockFloats * 4,
          2 * outStatRows * uint32_t(kAttentionStatLanes) * 4,
          AttentionDropoutBuffers(rows, s2b, dropout),
          maskFull,
          dropout != kDropoutOff};
}

// The backward AIV's rows and keys of a step: halves split at a multiple of 16 (so the halves of P^T start
// 32-byte aligned), the first to AIV 0.
ATTENTION_BUFFERS_FN uint32_t AttentionGradHalf(uint32_t count) { return ((count + 1) / 2 + 15) / 16 * 16; }

// The backward's blocksBuf_ sets of per-row 32-byte blocks: m, 1 / l, D, and the band's two edges.
namespace attention_grad_vec {
enum Blocks : uint32_t { kM, kInvL, kD, kBand, kBlockSets = kBand + 2 };
}  // namespace attention_grad_vec

// The backward AIV's buffers for `rows` query rows and `keys` key rows (AttentionGradHalf of s1Block, s2b) of an
// s2b-key block, dq / dk rows `dPitch` floats apart, dv rows `vPitch`, inputs of `elemBytes` bytes; S, dP and the
// statistics `sets` times (1 or 2: AttentionGradTilingData::vecSets).
struct AttentionGradVectorUb {
  uint32_t s, dp, bound;     // S then P, dP then dS (each set's), the mask bound: fp32 [rows, s2b]
  uint32_t mask, maskHalf;   // atten_mask's bytes (whole blocks), and as half (maskFull; else unused)
  uint32_t stage;            // P^T and dS^T (or dS) in the input dtype
  uint32_t offsets;          // Gather's offsets
  uint32_t acc;              // dk and dv, or dq, summed in fp32
  uint32_t ramp, rowRamp;    // the column and row ramps
  uint32_t stats;            // each set's softmax_max / softmax_sum rows (8 lanes), then D (a lane per row)
  uint32_t rowValues;        // D (ComputeD's), the band's two edges: a lane per row
  uint32_t blocks;           // the per-row blocks (attention_grad_vec::Blocks)
  AttentionDropoutUb drop;  // dropout's (else unused)
  uint32_t sets;
  bool maskFull, dropout;
  ATTENTION_BUFFERS_FN uint32_t Total() const {
    return sets * (s + dp + stats) + bound + (maskFull ? mask + maskHalf : 0) + stage + offsets + acc + ramp + rowRamp +
           rowValues + blocks + (dropout ? drop.Total() : 0);
  }
};
ATTENTION_BUFFERS_FN AttentionGradVectorUb AttentionGradVectorBuffers(uint32_t rows, uint32_t keys, uint32_t s2b,
                                                                      uint32_t dPitch, uint32_t vPitch,
                                                                      uint32_t elemBytes, bool maskFull, uint32_t sets,
                                                                      int32_t dropout) {
  const uint32_t area = rows * s2b;  // elements of one row block of S
  const uint32_t accKeys = keys * (dPitch + vPitch), accRows = rows * dPitch;
  return {area * 4,
          area * 4,
          area * 4,
          (area + 31) / 32 * 32,
          area * 2,
          2 * area * elemBytes,
          area * 4,
          (accKeys > accRows ? accKeys : accRows) * 4,
          s2b * 4,
          kAttentionMaxRows * 4,
          (2 * rows * uint32_t(kAttentionStatLanes) + kAttentionMaxRows) * 4,
          3 * kAttentionMaxRows * 4,
          attention_grad_vec::kBlockSets * kAttentionMaxRows * kAttentionBlockFloats * 4,
          AttentionDropoutBuffers(rows, s2b, dropout),
          sets,
          maskFull,
          dropout != kDropoutOff};
}
