// rotary_mul_grad for the op package: dx = dy * r1 + rotate^T(dy * r2), the kernel body of kernels/rope.cpp.
#include "kernels/rope.cpp"

extern "C" __global__ __aicore__ void rotary_mul_grad(GM_ADDR dy, GM_ADDR r1, GM_ADDR r2, GM_ADDR dx, GM_ADDR workspace,
                                                      GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(RopeTilingData);
  GET_TILING_DATA_WITH_STRUCT(RopeTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  RopePass<DTYPE_DY>(dy, r1, r2, dx, tilingData);
}
