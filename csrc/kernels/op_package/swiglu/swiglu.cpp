// swiglu for the op package: y = silu(A) * B, the kernel body of kernels/swiglu.cpp.
#include "kernels/swiglu.cpp"

extern "C" __global__ __aicore__ void swiglu(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(SwigluTilingData);
  GET_TILING_DATA_WITH_STRUCT(SwigluTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  ProcessSwiglu<DTYPE_X>(x, y, tilingData, &pipe);
}
