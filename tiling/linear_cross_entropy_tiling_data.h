// Tiling data shared by the host tiling (linear_cross_entropy_tiling.cpp) and the fused linear cross-entropy mix
// kernels (csrc/kernels/linear_cross_entropy.cpp, linear_cross_entropy_grad.cpp). The logits hidden x weight^T are
// made one [kLceBlock x kLceBlock] score block at a time on a core group's AIC and folded by its two AIVs; nothing of
// tokens x vocab exists anywhere. A task is a fixed block of rows of one operand that walks the blocks of the other
// (the "moving" rows): forward and the backward's dx are token tasks (128 tokens against every vocab block), the
// backward's dw vocab tasks (128 vocab rows against every token block), dealt to the groups (LceTaskWalk).
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one per dtype of hidden / weight (target is int64).
#define LINEAR_CROSS_ENTROPY_DTYPES ASCENDC_FLOAT_DTYPES
#define LINEAR_CROSS_ENTROPY_GRAD_DTYPES ASCENDC_FLOAT_DTYPES
// bias [V] (hidden's dtype) and classWeight [V] (fp32) are optional: nullptr when absent (hasBias / hasClassWeight).
#define LINEAR_CROSS_ENTROPY_PARAMS(GM)                                                                           \
  GM hidden, GM weight, GM target, GM bias, GM classWeight, GM logitsMax, GM sumExp, GM targetLogit, GM logitSum, \
      GM workspace, GM tiling
#define LINEAR_CROSS_ENTROPY_GRAD_PARAMS(GM)                                                                       \
  GM hidden, GM weight, GM target, GM lse, GM gradSoftmax, GM gradTarget, GM gradUniform, GM bias, GM classWeight, \
      GM gradHidden, GM gradWeight, GM gradBias, GM workspace, GM tiling

// Rows of a fixed block and of a moving block: a score block is kLceBlock x kLceBlock, each AIV takes half the rows.
constexpr int64_t kLceBlock = 128;
// Core groups of a launch at most (the backward's deal keeps a count per group; a 910B has 24).
constexpr int64_t kLceMaxGroups = 64;
// Score slots per group: the AIC computes the next block while the AIVs fold the last. The forward's AIC writes
// its blocks in pairs (two L0C tiles against one load of the token rows), so it gets two pairs' worth.
constexpr int64_t kLceScoreSlots = 2;
constexpr int64_t kLceForwardScoreSlots = 4;
// Forward statistics per token (max, sum-exp, target logit, logit sum): a task's partials in the workspace.
constexpr int64_t kLceStatistics = 4;
// The backward's token walks per launch at most (each with its own fp32 sums of grad_hidden).
constexpr int64_t kLceMaxGradSums = 4;
// The backward's G segments per group: the AIVs write one while the AIC multiplies the other.
constexpr int64_t kLceGradSlots = 2;

struct LinearCrossEntropyTilingData {
  int64_t tokens;      // T: rows of hidden and of target
  int64_t hidden;      // H: columns of hidden and weight (the score's reduction)
  int64_t vocab;       // V: rows of weight (a shard's, from vocabStart)
  int64_t vocabStart;  // the vocabulary id of weight row 0: targets outside [vocabStart, vocabStart + V) are elsewhere
  float softcap;  // > 0: logits = softcap * tanh(scores / softcap) (Gemma 2/3's final_logit_softcapping)
  // scores = hidden x weight^T + bias (the shard's [V]); logit_sum and label smoothing's gradient weigh class c by
  // classWeight[c] (torch's cross-entropy weight)
  int32_t hasBias, hasClassWeight;
  int32_t kChunk;  // H columns of one score Mmad (half of L0A / L0B), loaded into L1 together
  int64_t tokenTasks;  // ceil(T / kLceBlock)
  int64_t vocabTasks;  // backward: ceil(V / kLceBlock), done before the token tasks; forward: 0
  // Backward: a task's moving blocks go in segments of segBlocks; the AIVs write a segment's G (input dtype,
  // [kLceBlock, segBlocks * kLceBlock]) and the AIC multiplies it into the task's fp32 accumulator, gemmChunk
  // columns of H per L0C tile, gemmK moving rows per Mmad.
  int32_t segBlocks, gemmChunk, gemmK;
  int32_t blockDim;
  int32_t scoreSlots;  // kLceScoreSlots, or the forward's kLceForwardScoreSlots
  // Each group's GM workspace (bytes from the user workspace): scoreSlots fp32 score slots, then (backward)
  // kLceGradSlots G segments, then the fp32 accumulator [kLceBlock, H].
  int64_t workspacePerGroup, scoreSlotBytes, gradOffset, gradSlotBytes, accOffset;
  // Forward: this launch folds the shard's vocabulary rows [vocabBegin, vocabEnd) (a launch's range fits the L2,
  // linear_cross_entropy_tiling.cpp), cut into vocabSplits ranges of splitBlocks blocks (the last may be
  // shorter); a task is (split, token block), split-major. Each task writes its partial statistics
  // [vocabSplits][kLceStatistics][T] fp32 at partialOffset; after a SyncAll the AIVs combine them per token
  // (with the outputs' earlier values when `chained`: an earlier launch's ranges) into the outputs.
  int64_t vocabBegin, vocabEnd, vocabSplits, splitBlocks, partialOffset;
  int32_t chained;
  int32_t launches;  // launches over the shard, of launchRows rows each (the last may be shorter)
  int64_t launchRows;
  // The backward: a launch takes the rows [vocabBegin, vocabEnd) (its vocab tasks), and its token tasks walk them
  // in vocabSplits splits of splitBlocks blocks. gradSums > 0: grad_hidden's fp32 sums [gradSums][T, H] at
  // partialOffset, split j's in sums j, carried from launch to launch and combined into grad_hidden after the last
  // launch's tasks; 0: one launch, one split, each token task casts its accumulator.
  int32_t gradSums;
};
