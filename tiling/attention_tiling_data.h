// Tiling data shared by the host tiling (attention_tiling.cpp) and the FlashAttention-2 mix kernel
// (csrc/kernels/attention.cpp). The work is B x N1 x S1 blocks ("tasks"; decode with GQA: B x N2, see
// stackHeads), task t done by core group t % blockDim (one AIC and its two AIVs); a task walks the S2
// blocks its rows need (AttentionS2Blocks, attention_blocks.h), never split across groups. Varlen (TND)
// batches: the tiling bytes go on after this struct with int64 cumulative query ends [batch], then key
// ends [batch] (torch_npu's actual_seq_qlen / actual_seq_kvlen, no leading 0), which the kernel reads
// from GM.
#pragma once
#include <cstdint>

#include "kernel_dtypes.h"

// The kernel entries, one per dtype of query/key/value (tiling/kernel_dtypes.h says how they are read).
#define FUSION_ATTENTION_DTYPES ASCENDC_FLOAT_DTYPES
#define FUSION_ATTENTION_PARAMS(GM)                                                                              \
  GM query, GM key, GM value, GM attenMask, GM sink, GM dropMask, GM attentionOut, GM softmaxMax, GM softmaxSum, \
      GM workspace, GM tiling

// torch_npu's input_layout values, as the tiling stores them.
enum AttentionLayout : int32_t { kLayoutBSH = 0, kLayoutSBH, kLayoutBSND, kLayoutBNSD, kLayoutTND };

// softmax_max / softmax_sum repeat each row's value this many times (torch_npu's [B, N, S, 8]).
constexpr int64_t kAttentionStatLanes = 8;

// The forward's pipeline depths. The cube computes S of block n + kAttentionSLead before P V of block n,
// so S has one slot more; the AIVs work out P of block n + kAttentionPLead before they fold in P V of
// block n, so P (and the rescale factors in UB) have one slot more; P V waits in two slots.
constexpr int64_t kAttentionSLead = 3;
constexpr int64_t kAttentionSSlots = kAttentionSLead + 1;
constexpr int64_t kAttentionPLead = 2;
constexpr int64_t kAttentionPSlots = kAttentionPLead + 1;
constexpr int64_t kAttentionOSlots = 2;

struct AttentionTilingData {
  int64_t batch;     // B
  int64_t heads;     // N1: query heads
  int64_t kvHeads;   // N2: key/value heads (N1 % N2 == 0; query head n reads kv head n / (N1 / N2))
  int64_t headDim;   // D of query and key
  int64_t valueDim;  // Dv of value and the output (<= D)
  int64_t s1, s2;    // query / key rows per batch (TND: unused, the cumulative table holds them)
  int32_t varlen;    // 1: TND, per-batch lengths from the table after this struct
  int32_t layout;    // AttentionLayout
  // Element strides in GM of a batch, a head and a row (TND: batch stride 0, rows counted from the
  // batch's first token). out is laid out as query with Dv for D.
  int64_t qStrideB, qStrideN, qStrideS;
  int64_t kStrideB, kStrideN, kStrideS;
  int64_t vStrideB, vStrideN, vStrideS;
  int64_t oStrideB, oStrideN, oStrideS;
  float scale;
  float softcap;     // > 0: S = softcap * tanh(scale * q k^T / softcap) before the mask; 0: S = scale * q k^T
  int32_t sink;      // 1: sink [N1] (fp32) is one more logit of every row of its head, with no value (gpt-oss)
  int32_t maskFull;  // 1: atten_mask [.., S1, S2] (bool, True = masked) is read from GM
  int64_t maskStrideB, maskStrideN, maskStrideS;  // elements; 0 for a dimension the mask broadcasts
  // The band (sparse modes 2, 3, 4, and 0 with a mask): row i keeps keys j with
  // i + offset - preTokens <= j <= i + offset + nextTokens, offset = S2 - S1 when bottomRight, else 0.
  int32_t band;
  int32_t bottomRight;
  int64_t preTokens, nextTokens;
  int32_t s1Block;  // query rows of one task (each AIV takes half)
  int32_t s2Block;  // keys of one S block
  int32_t qkChunk;  // D columns of one Q K^T Mmad (L0A/L0B)
  int32_t pvChunk;  // keys of one P V Mmad
  int64_t tasks;    // B x N1 x S1 blocks (TND: summed over the batches)
  // Each group's GM workspace (bytes from the user workspace): kAttentionSSlots fp32 S slots, then
  // kAttentionPSlots of P (input dtype), then kAttentionOSlots of the fp32 P V. A group's blocks form one
  // stream over its tasks; block n takes slot n % count of each.
  int64_t workspacePerGroup, sSlotBytes, pOffset, oOffset;
  int64_t pSlotBytes, oSlotBytes;
  // The AIC's buffers of each L1 tile (Q, K, V, P) and of the L0C accumulator: 2 where they fit, so a
  // block's loads overlap the previous block's Mmad and its Mmad the previous Fixpipe.
  int32_t l1Buffers, l0cBuffers;
  // 1: the AIVs load a block's P V into a buffer of its own, while they still work out the next P; 0: it
  // comes in chunks through the buffer P went out of, after it (UB holds no more).
  int32_t pvBuffer;
  int32_t vPitch;  // Dv rounded up to 16: the row pitch of P V in the workspace and of O in UB
  int32_t blockDim;
  // Decode (S1 x group <= s1Block, not TND): 1 task per (batch, kv head) whose rows are its group's
  // query heads stacked, row r = query row r / G of head n0 + r % G, so K and V are read once per group,
  // not once per query head. stackHeads = G then, else 1 (a task is one head's rows).
  int32_t stackHeads;
  // Prefill with GQA: a bundle of groupHeads query heads of one kv group (a divisor of G, chosen so the
  // bundles still fill the waves) is dealt as one, its tasks (the heads' tasks of one S1 block, same rows, so
  // the same S2 blocks) run back to back on one group, and the AIC keeps the first kvCacheBlocks K / V tiles
  // of the bundle's first task in L1 for the others: those cross GM -> L1 once per bundle. groupHeads 1,
  // kvCacheBlocks 0: off. kvStream 0: the cache holds every block, so the AIC has no streaming K / V buffers.
  int32_t groupHeads, kvCacheBlocks, kvStream;
  // Dropout (keep_prob < 1, unstacked): P V takes P * keep / keep_prob, keep the bit of drop_mask (one a score
  // element, flat over [B, N1, S1, S2]; TND [N1, s1_b, s2_b] per sequence: attention_dropout.h); the statistics
  // stay P's.
  // AttentionDropoutMode (attention_buffers.h): 0 off, 1 rows at any bit, 2 rows of whole bytes (S2 % 8 == 0).
  int32_t dropout;
  float keepProbInv;  // 1 / keep_prob
};
