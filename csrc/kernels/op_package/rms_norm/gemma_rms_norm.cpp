// gemma_rms_norm for the op package: rms_norm's kernel; the tiling's gammaOffset (1) makes its weight 1 + gamma.
#include "kernels/rms_norm.cpp"

extern "C" __global__ __aicore__ void gemma_rms_norm(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, GM_ADDR rstd,
                                                     GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(NormTilingData);
  GET_TILING_DATA_WITH_STRUCT(NormTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  ProcessRmsNorm<DTYPE_X, DTYPE_GAMMA, false>(x, x, gamma, y, rstd, y, tilingData, &pipe);
}
