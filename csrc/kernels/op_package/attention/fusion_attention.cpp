// fusion_attention for the op package: the mix kernel of kernels/attention.cpp. The tiling buffer holds the
// struct, then TND's cumulative lengths, which the kernel reads from GM (attention_task.h).
#include "kernels/attention.cpp"

extern "C" __global__ __aicore__ void fusion_attention(GM_ADDR query, GM_ADDR key, GM_ADDR value, GM_ADDR atten_mask,
                                                       GM_ADDR sink, GM_ADDR drop_mask, GM_ADDR attention_out,
                                                       GM_ADDR softmax_max, GM_ADDR softmax_sum, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(AttentionTilingData);
  GET_TILING_DATA_WITH_STRUCT(AttentionTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  RunFusionAttention<DTYPE_QUERY>(query, key, value, atten_mask, sink, drop_mask, attention_out, softmax_max,
                                  softmax_sum, workspace, tilingData, tiling);
}
