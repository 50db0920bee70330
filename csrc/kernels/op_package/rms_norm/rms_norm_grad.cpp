// rms_norm_grad for the op package: dx and dgamma in one launch (rms_norm_grad_one_launch.h).
#include "rms_norm_grad_one_launch.h"

extern "C" __global__ __aicore__ void rms_norm_grad(GM_ADDR dy, GM_ADDR x, GM_ADDR rstd, GM_ADDR gamma, GM_ADDR dx,
                                                    GM_ADDR dgamma, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(NormTilingData);
  GET_TILING_DATA_WITH_STRUCT(NormTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);  // SyncAll: AIV_ONLY starts no cross-core scheduler
  RmsNormGradOneLaunch<DTYPE_X, DTYPE_GAMMA, false>(dy, x, rstd, gamma, dy, dx, dgamma, workspace, tilingData);
}
