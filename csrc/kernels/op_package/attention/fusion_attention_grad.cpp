// fusion_attention_grad for the op package: the two-pass mix kernel of kernels/attention_grad.cpp. The tiling
// buffer holds the struct, then TND's cumulative lengths, which the kernel reads from GM (attention_task.h).
#include "kernels/attention_grad.cpp"

extern "C" __global__ __aicore__ void fusion_attention_grad(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR dy,
                                                            GM_ADDR atten_mask, GM_ADDR softmax_max,
                                                            GM_ADDR softmax_sum, GM_ADDR attention_in,
                                                            GM_ADDR drop_mask, GM_ADDR sink, GM_ADDR dq, GM_ADDR dk,
                                                            GM_ADDR dv, GM_ADDR dsink, GM_ADDR workspace,
                                                            GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(AttentionGradTilingData);
  GET_TILING_DATA_WITH_STRUCT(AttentionGradTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  RunFusionAttentionGrad<DTYPE_QUERY>(query, key, value, dy, atten_mask, softmax_max, softmax_sum, attention_in,
                                      drop_mask, sink, dq, dk, dv, dsink, workspace, tilingData, tiling);
}
