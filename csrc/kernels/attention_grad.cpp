// Fused attention backward (torch_npu's npu_fusion_attention_grad), a FlashAttention-2 mix kernel
// (KERNEL_TYPE_MIX_AIC_1_2) in two passes with no atomics: key tasks (batch, kv head, S2 block) sum dk
// and dv over the query heads of their group and the S1 blocks that keep their keys; query tasks (batch,
// query head, S1 block) sum dq over the S2 blocks their rows keep. Each step recomputes S = Q K^T and
// dP = dy V^T on the AIC (attention_grad_cube.h) and P and dS on the AIVs (attention_grad_vector.h); a
// task's sums add up in the AIC's L0C in fp32 and the AIVs cast them once, so every output row is written by
// one core in a fixed order. Nothing S x S lives in GM beyond the group's workspace blocks. Each pass is dealt to the
// core groups in snake order (causal tasks have unequal work: a group that drew a cheap one draws a dear
// one next), and a group's steps of both passes are one stream, the cube two steps ahead of the AIVs.
#include "attention_grad_cube.h"
#include "attention_grad_tiling_data.h"
#include "attention_grad_vector.h"
#include "kernel_utils.h"

// Core group `group`'s key tasks, then its query tasks, each pass dealt in snake order of its own.
__aicore__ inline void WalkTasks(AttentionTaskWalk& keys, AttentionTaskWalk& queries, const AttentionGradTilingData& g,
                                 GM_ADDR table, int64_t group) {
  keys.Init(g.fwd, table, group, g.kvTasks, true, true);
  queries.Init(g.fwd, table, group, g.fwd.tasks, false, true);
}

// `g` is the tiling struct at the start of `tiling` (GM), which TND's cumulative lengths follow.
template <typename T>
__aicore__ inline void RunFusionAttentionGrad(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR dy, GM_ADDR attenMask,
                                              GM_ADDR softmaxMax, GM_ADDR softmaxSum, GM_ADDR attentionIn,
                                              GM_ADDR dropMask, GM_ADDR sink, GM_ADDR dq, GM_ADDR dk, GM_ADDR dv,
                                              GM_ADDR dsink, GM_ADDR workspace, const AttentionGradTilingData& g,
                                              GM_ADDR tiling) {
  GM_ADDR ws = GetUserWorkspace(workspace);
  GM_ADDR table = tiling + sizeof(AttentionGradTilingData);
  AttentionTaskWalk keys, queries, dRows;
  if ASCEND_IS_AIC {
    WalkTasks(keys, queries, g, table, GetBlockIdx());
    AttentionGradCube<T> cube;
    cube.Init(query, key, value, dy, ws, g);
    cube.Process(keys, queries);
  }
  if ASCEND_IS_AIV {
    WalkTasks(keys, queries, g, table, GetBlockIdx() / GetTaskRation());
    WalkTasks(keys, dRows, g, table, GetBlockIdx() / GetTaskRation());  // the query tasks' rows, for D
    AttentionGradVector<T> vec;
    vec.Init(attenMask, dy, softmaxMax, softmaxSum, attentionIn, dropMask, sink, dq, dk, dv, dsink, ws, g, table);
    vec.ProcessD(dRows);
    vec.Process(keys, queries);
    vec.SinkGrad();
  }
}

// One entry per dtype (FUSION_ATTENTION_GRAD_DTYPES, tiling/attention_grad_tiling_data.h).
#define FUSION_ATTENTION_GRAD_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                                              \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(FUSION_ATTENTION_GRAD_PARAMS(GM_ADDR)) {                       \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                               \
    AttentionGradTilingData g;                                                                                       \
    CopyTiling(&g, tiling);                                                                                          \
    RunFusionAttentionGrad<T>(query, key, value, dy, attenMask, softmaxMax, softmaxSum, attentionIn, dropMask, sink, \
                              dq, dk, dv, dsink, workspace, g, tiling);                                              \
  }
FUSION_ATTENTION_GRAD_DTYPES(FUSION_ATTENTION_GRAD_ENTRY, fusion_attention_grad)
#undef FUSION_ATTENTION_GRAD_ENTRY
