// cross_entropy_loss_grad for the op package: the per-row coefficients and the blocks' partial sums, SyncAll, then the
// row kernel of kernels/cross_entropy_grad.cpp (cross_entropy_phases.h).
#include "cross_entropy_phases.h"

extern "C" __global__ __aicore__ void cross_entropy_loss_grad(GM_ADDR grad_loss, GM_ADDR log_prob, GM_ADDR target,
                                                              GM_ADDR weight, GM_ADDR grad_zloss, GM_ADDR lse_for_zloss,
                                                              GM_ADDR x_grad, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(CrossEntropyTilingData);
  GET_TILING_DATA_WITH_STRUCT(CrossEntropyTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);  // SyncAll: AIV_ONLY starts no cross-core scheduler
  GM_ADDR coef = GetUserWorkspace(workspace);
  GM_ADDR slots = coef + (tilingData.rows * 3 * sizeof(float) + 31) / 32 * 32;
  CrossEntropyGradRows<DTYPE_LOG_PROB>(grad_loss, target, weight, grad_zloss, lse_for_zloss, coef, slots, tilingData);
  SyncAll();  // every block's coefficients and partial sums are in GM
  float invD = 1.0f, invDz = 1.0f, weightSum = 0.0f;
  CrossEntropyGradScales(weight, slots, GetBlockNum(), tilingData, invD, invDz, weightSum);
  TPipe pipe;
  KernelCrossEntropyGrad<DTYPE_LOG_PROB> op;
  op.Init(log_prob, target, weight, coef, x_grad, tilingData, &pipe);
  op.SetScales(invD, invDz, weightSum);
  op.Process();
}
