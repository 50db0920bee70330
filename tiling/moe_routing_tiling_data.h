// Tiling data of the MoE routing kernels (moe_routing_permute.cpp, moe_routing_unpermute.cpp).
// permute: the T*K expert ids are sorted on the device as score = -id, index = position (Sort in
//   chunks of chunkLen, then rounds of 4-way MrgSort of listLen-long lists), then rows are gathered.
// unpermute (and its grad): each block takes a range of tokens; rows are processed colChunk
//   elements at a time (any hidden size), accumulated in fp32.
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one list per op, and their GM parameters (tiling/kernel_dtypes.h says how they are read).
// permute: the chunk sort per expert-id dtype, the merge rounds (one entry) and the row gather per tokens dtype.
#define MOE_SORT_CHUNKS_DTYPES(X, ...)              \
  X(int32, int32_t, int32_t, Int, Int, __VA_ARGS__) \
  X(int64, int64_t, int64_t, Long, Long, __VA_ARGS__)
#define MOE_TOKEN_PERMUTE_DTYPES ASCENDC_FLOAT_DTYPES
// unpermute and its grad: one entry per (tokens, probs) dtype pair of op_proto/moe_routing/moe_token_unpermute.json
// (without probs: the tokens dtype twice).
#define MOE_TOKEN_UNPERMUTE_DTYPES ASCENDC_FLOAT_PAIR_DTYPES
#define MOE_TOKEN_UNPERMUTE_GRAD_DTYPES MOE_TOKEN_UNPERMUTE_DTYPES
#define MOE_SORT_CHUNKS_PARAMS(GM) GM indices, GM sorted, GM workspace, GM tiling
#define MOE_MERGE_SORTED_PARAMS(GM) GM src, GM dst, GM workspace, GM tiling
#define MOE_TOKEN_PERMUTE_PARAMS(GM) GM tokens, GM sorted, GM permuted, GM sortedIndices, GM workspace, GM tiling
#define MOE_TOKEN_UNPERMUTE_PARAMS(GM) GM permuted, GM sortedIndices, GM probs, GM out, GM workspace, GM tiling
#define MOE_TOKEN_UNPERMUTE_GRAD_PARAMS(GM) \
  GM permuted, GM dout, GM sortedIndices, GM probs, GM dpermuted, GM dprobs, GM workspace, GM tiling

// Routes per token at most (topK): the unpermute kernels hold one token's routes in UB. The problem
// functions (tiling/moe_routing_problem.h: bindings, Meta kernels, op_host) and
// torch.ops.ascendc_ops.moe_max_topk() read this one definition.
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
