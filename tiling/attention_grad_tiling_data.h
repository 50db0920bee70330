// Tiling data of the fused attention backward (csrc/kernels/attention_grad.cpp), a FlashAttention-2
// mix kernel in two passes with no atomics: the dk / dv tasks (batch, kv head, S2 block) walk the query
// heads of their group and the S1 blocks whose rows keep a key of the block (AttentionS1Blocks), the dq
// tasks (batch, query head, S1 block) the S2 blocks as the forward does. Each task accumulates its rows
// in fp32 in UB and casts once, so the sums' order is fixed and no core writes another's rows.
// Each pass's tasks are dealt to the core groups in snake order (attention_task.h), and a group's steps
// of both passes are one stream, the cube kAttentionGradLead steps ahead of the AIVs' results (step n
// uses workspace slot n % kAttentionGradSlots). TND's cumulative lengths follow this struct in GM as in
// the forward.
#pragma once
#include <cstdint>

#include "attention_tiling_data.h"

#define FUSION_ATTENTION_GRAD_DTYPES ASCENDC_FLOAT_DTYPES
#define FUSION_ATTENTION_GRAD_PARAMS(GM)                                                                               \
  GM query, GM key, GM value, GM dy, GM attenMask, GM softmaxMax, GM softmaxSum, GM attentionIn, GM dropMask, GM sink, \
      GM dq, GM dk, GM dv, GM dsink, GM workspace, GM tiling

// The backward's pipeline: the AIC computes S and dP of step n + kAttentionGradLead before the parts of
// step n (fwd.l1Buffers 2; with one L1 buffer a query task's Q could not wait beside the last key steps'
// Parts' reloads, so it runs at lead 0); the AIVs form dS of step n + kAttentionGradLead before they add in
// the parts of step n. So S, dP, P, dS and the results take a slot per step in flight.
constexpr int64_t kAttentionGradLead = 4;
constexpr int64_t kAttentionGradSlots = kAttentionGradLead + 1;
// The AIC's ring of tiles in L1 (qdyRing): one per step, held from its Scores to its Parts (a key step's Q and dy,
// a query step's K and V); a slot per step in flight and one more, so a tile's loads wait for the tile before the
// last to be read into L0, long done, not for the Parts just issued.
constexpr int64_t kAttentionGradRing = kAttentionGradLead + 2;

struct AttentionGradTilingData {
  // Shapes, strides (dy and attention_in as the forward's out; dq / dk / dv as query / key / value),
  // mask, band and block sizes; fwd.tasks counts the dq tasks.
  AttentionTilingData fwd;
  int64_t kvTasks;   // B x N2 x S2 blocks (TND: summed over the batches)
  int32_t dPitch;    // D rounded up to 16: the row pitch of dq / dk sums in UB and the workspace
  int32_t rowChunk;  // query rows of one dv = P^T dy / dk = dS^T Q Mmad (L0A / L0B)
  // Each group's GM workspace (bytes from the user workspace): kAttentionGradSlots slots of slotBytes,
  // each S and dP (fp32), P^T and dS or dS^T (the input dtype, [S2 block, S1 pitch] or [S1 block, S2
  // block]), and the cube's two fp32 results (dk or dq rows at dPitch, dv rows at vPitch); the offsets
  // are inside a slot.
  int64_t workspacePerGroup, slotBytes, dpOffset, pOffset, dsOffset, r1Offset, r2Offset;
  // After blockDim groups' workspaces: D = rowsum(dy * attention_in) of every query row, fp32, in the rows of
  // softmax_max / softmax_sum (one lane): the AIVs compute it once before the tasks and the steps read it.
  int64_t dOffset;
  // With a sink (fwd.sink): after D, each query task's two AIVs' sums of p_sink * D over their rows, a 32-byte slot
  // each (8 fp32 copies), head by head: slot 2 * (n * headTasks + the task's place among head n's) + AIV; summed per
  // head into dsink at the end.
  int64_t sinkOffset, headTasks;
  int32_t s1Pitch;  // s1Block rounded up to 16: the row pitch of P^T and dS^T
  // 1: a task's sums (dk and dv, or dq) add up in L0C over its steps and leave by one Fixpipe at its end; 0 (head
  // dims past 256, where they do not fit beside S and dP): each step's parts leave by their own.
  int32_t l0cSums;
  // The AIVs' sets of S / dP / statistics buffers in UB: 2 where they fit beside the rest (the loads of step n + 1
  // run under step n's vector work), else 1 (each step loads, then computes).
  int32_t vecSets;
  // 1: the AIC's ring of kAttentionGradRing tiles (where L1 holds it), so a step's Parts read the Q and dy (key
  // step) or K (query step) its Scores loaded; 0: two Q / dy / K buffers, the Parts loading theirs again.
  int32_t qdyRing;
};

#ifdef __aicore__
#define ATTENTION_GRAD_FN __aicore__ inline
#else
#define ATTENTION_GRAD_FN inline
#endif

// The AIC's L0C in bytes: the task sums' buffer (dk [s2b, d16] then dv [s2b, v16] of a key task, or dq [s1b, d16])
// and each product buffer (S or dP; without L0C sums the step's parts too).
struct AttentionGradL0c {
  int64_t sums, product;
};
ATTENTION_GRAD_FN AttentionGradL0c AttentionGradL0cBytes(int64_t s1b, int64_t s2b, int64_t d16, int64_t v16,
                                                         bool sums) {
  const int64_t keys = s2b * (d16 + v16), rows = s1b * d16, widest = s2b * (d16 > v16 ? d16 : v16);
  if (sums) return {(keys > rows ? keys : rows) * 4, s1b * s2b * 4};
  const int64_t parts = widest > rows ? widest : rows;
  return {0, (parts > s1b * s2b ? parts : s1b * s2b) * 4};
}

// The AIC's L1 in bytes with the ring (attention_grad_cube.h): kAttentionGradRing tiles and the task's own tile (a
// key task's K and V, a query task's Q and dy), each Align16 rows of the larger block by d16 + v16, and the tile of
// P with dS (a key step) or dS (a query step).
ATTENTION_GRAD_FN int64_t AttentionGradRingL1Bytes(int64_t s1b, int64_t s2b, int64_t s1p, int64_t d16, int64_t v16,
                                                   int64_t bytes) {
  const int64_t tile = (s1b > s2b ? s1b : s2b) * (d16 + v16), parts = 2 * s2b * s1p;
  return ((kAttentionGradRing + 1) * tile + (parts > s1b * s2b ? parts : s1b * s2b)) * bytes;
}
