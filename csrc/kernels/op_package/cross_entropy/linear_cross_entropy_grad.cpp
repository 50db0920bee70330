// linear_cross_entropy_grad for the op package: the mix kernel of kernels/linear_cross_entropy_grad.cpp.
#include "kernels/linear_cross_entropy_grad.cpp"

extern "C" __global__ __aicore__ void linear_cross_entropy_grad(GM_ADDR hidden, GM_ADDR weight, GM_ADDR target,
                                                                GM_ADDR lse, GM_ADDR grad_softmax, GM_ADDR grad_target,
                                                                GM_ADDR grad_uniform, GM_ADDR bias,
                                                                GM_ADDR class_weight, GM_ADDR grad_hidden,
                                                                GM_ADDR grad_weight, GM_ADDR grad_bias,
                                                                GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(LinearCrossEntropyTilingData);
  GET_TILING_DATA_WITH_STRUCT(LinearCrossEntropyTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
  RunLinearCrossEntropySides<DTYPE_HIDDEN, LceGradVector<DTYPE_HIDDEN>>(
      hidden, weight, workspace, tilingData, true, target, lse, grad_softmax, grad_target, grad_uniform, bias,
      class_weight, grad_hidden, grad_weight, grad_bias);
}
