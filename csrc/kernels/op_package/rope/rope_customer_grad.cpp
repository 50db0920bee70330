// rope_customer_grad for the op package: backward of the tutorial RoPE, the kernel body of kernels/rope.cpp.
#include "kernels/rope.cpp"

extern "C" __global__ __aicore__ void rope_customer_grad(GM_ADDR dy, GM_ADDR cos, GM_ADDR sin, GM_ADDR dx,
                                                         GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(RopeTilingData);
  GET_TILING_DATA_WITH_STRUCT(RopeTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  RopePass<DTYPE_DY>(dy, cos, sin, dx, tilingData);
}
