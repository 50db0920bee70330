// Tiling data of the MoE routing kernels (moe_routing_permute.cpp, moe_routing_unpermute.cpp).
// permute: the T*K expert ids are sorted on the device as score = -id, index = position (Sort in
//   chunks of chunkLen, then rounds of 4-way MrgSort of listLen-long lists), then rows are gathered.
// unpermute (and its grad): each block takes a range of tokens; rows are processed colChunk
//   elements at a time (any hidden size), accumulated in fp32.
#pragma once
#include <cstdint>

// Routes per token at most (topK): the unpermute kernels hold one token's routes in UB. The op_host,
// the bindings and Python (torch.ops.ascendc_ops.moe_max_topk()) read this one definition.
constexpr uint32_t MOE_MAX_TOPK = 512;

struct MoeRoutingTilingData {
  int64_t tokens;         // T
  int64_t topK;           // K
  int64_t hidden;         // H
  int64_t sortLen;        // T * K
  int64_t numOut;         // rows of permuted_tokens (<= T * K; capacity drops the rest)
  int64_t chunkLen;       // ids one block sorts (a multiple of 32, <= 255 * 32)
  int64_t chunks;         // ceil(sortLen / chunkLen)
  int64_t listLen;        // merge round: length of each sorted input list (the last may be shorter)
  int64_t lists;          // merge round: lists in the input (each block merges 4 of them)
  int64_t mergeWindow;    // pairs of each list held in UB at once
  int64_t tasksPerBlock;  // row phases: tokens per block ...
  int64_t tasksRemainder; // ... and the first tasksRemainder blocks one more
  uint32_t colChunk;      // row elements per UB pass (a multiple of 32-byte blocks)
  uint32_t hasProbs;      // unpermute: probs given
};
