// gated_rms_norm for the op package: rms_norm's kernel with its z queue (GATE), by the same dispatch.
#include "kernels/rms_norm.cpp"

extern "C" __global__ __aicore__ void gated_rms_norm(GM_ADDR x, GM_ADDR gamma, GM_ADDR z, GM_ADDR y, GM_ADDR rstd,
                                                     GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(NormTilingData);
  GET_TILING_DATA_WITH_STRUCT(NormTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  ProcessRmsNorm<DTYPE_X, DTYPE_GAMMA, false, true>(x, x, gamma, y, rstd, y, tilingData, &pipe, z);
}
