// Fused attention forward (torch_npu's npu_fusion_attention), a FlashAttention-2 mix kernel
// (KERNEL_TYPE_MIX_AIC_1_2): each task (batch, query head, S1 block; GQA: a bundle of a kv group's heads'
// tasks, AttentionGroupWalk) runs on one core group, its AIC
// computing S = Q K^T and O_j = P V (attention_cube.h), its two AIVs the scale, mask and online softmax,
// the rescaled fp32 accumulation of O and the one normalisation at the end (attention_vector.h). They hand
// S, P and O_j over through the group's GM workspace (nothing S x S beyond it) with mode-2 cross-core flags
// (attention_task.h). S2 blocks the band masks entirely are never computed (attention_blocks.h).
#include "attention_cube.h"
#include "attention_tiling_data.h"
#include "attention_vector.h"
#include "kernel_utils.h"

// `t` is the tiling struct at the start of `tiling` (GM), which TND's cumulative lengths follow.
template <typename T>
__aicore__ inline void RunFusionAttention(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR attenMask, GM_ADDR sink,
                                          GM_ADDR dropMask, GM_ADDR attentionOut, GM_ADDR softmaxMax,
                                          GM_ADDR softmaxSum, GM_ADDR workspace, const AttentionTilingData& t,
                                          GM_ADDR tiling) {
  GM_ADDR ws = GetUserWorkspace(workspace);
  GM_ADDR table = tiling + sizeof(AttentionTilingData);
  AttentionTaskWalk walk;
  AttentionGroupWalk bundles;  // GQA prefill: a kv group's heads back to back (tiling's groupHeads)
  if ASCEND_IS_AIC {
    AttentionCube<T> cube;
    cube.Init(query, key, value, ws, t);
    if (t.groupHeads > 1) {
      bundles.Init(t, table, GetBlockIdx());
      cube.Process(bundles);
    } else {
      walk.Init(t, table, GetBlockIdx(), t.tasks, false, true);
      cube.Process(walk);
    }
  }
  if ASCEND_IS_AIV {
    AttentionVector<T> vec;
    vec.Init(attenMask, sink, dropMask, attentionOut, softmaxMax, softmaxSum, ws, t, table);
    if (t.groupHeads > 1) {
      bundles.Init(t, table, GetBlockIdx() / GetTaskRation());
      vec.Process(bundles);
    } else {
      walk.Init(t, table, GetBlockIdx() / GetTaskRation(), t.tasks, false, true);
      vec.Process(walk);
    }
  }
}

// One entry per dtype (FUSION_ATTENTION_DTYPES, tiling/attention_tiling_data.h).
#define FUSION_ATTENTION_ENTRY(SUFFIX, T, G, TORCH_T, TORCH_G, OP)                                            \
  extern "C" __global__ __aicore__ void OP##_##SUFFIX(FUSION_ATTENTION_PARAMS(GM_ADDR)) {                     \
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);                                                        \
    AttentionTilingData t;                                                                                    \
    CopyTiling(&t, tiling);                                                                                   \
    RunFusionAttention<T>(query, key, value, attenMask, sink, dropMask, attentionOut, softmaxMax, softmaxSum, \
                          workspace, t, tiling);                                                              \
  }
FUSION_ATTENTION_DTYPES(FUSION_ATTENTION_ENTRY, fusion_attention)
#undef FUSION_ATTENTION_ENTRY
