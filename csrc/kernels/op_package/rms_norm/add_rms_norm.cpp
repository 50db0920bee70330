// add_rms_norm for the op package: x = x1 + x2, y = x * rstd * gamma (kernels/rms_norm.cpp).
#include "kernels/rms_norm.cpp"

extern "C" __global__ __aicore__ void add_rms_norm(GM_ADDR x1, GM_ADDR x2, GM_ADDR gamma, GM_ADDR y, GM_ADDR rstd,
                                                   GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(NormTilingData);
  GET_TILING_DATA_WITH_STRUCT(NormTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  ProcessRmsNorm<DTYPE_X1, DTYPE_GAMMA, true>(x1, x2, gamma, y, rstd, x, tilingData, &pipe);
}
