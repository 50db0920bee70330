// linear_cross_entropy for the op package: the mix kernel of kernels/linear_cross_entropy.cpp.
#include "kernels/linear_cross_entropy.cpp"

extern "C" __global__ __aicore__ void linear_cross_entropy(GM_ADDR hidden, GM_ADDR weight, GM_ADDR target, GM_ADDR bias,
                                                           GM_ADDR class_weight, GM_ADDR logits_max, GM_ADDR sum_exp,
                                                           GM_ADDR target_logit, GM_ADDR logit_sum, GM_ADDR workspace,
                                                           GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(LinearCrossEntropyTilingData);
  GET_TILING_DATA_WITH_STRUCT(LinearCrossEntropyTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  RunLinearCrossEntropySides<DTYPE_HIDDEN, LceVector<DTYPE_HIDDEN>>(hidden, weight, workspace, tilingData, false,
                                                                    target, bias, class_weight, logits_max, sum_exp,
                                                                    target_logit, logit_sum);
}
