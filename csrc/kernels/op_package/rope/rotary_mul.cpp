// rotary_mul for the op package: y = x * r1 + rotate(x) * r2, the kernel body of kernels/rope.cpp.
#include "kernels/rope.cpp"

extern "C" __global__ __aicore__ void rotary_mul(GM_ADDR x, GM_ADDR r1, GM_ADDR r2, GM_ADDR y, GM_ADDR workspace,
                                                 GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(RopeTilingData);
  GET_TILING_DATA_WITH_STRUCT(RopeTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  RopePass<DTYPE_X>(x, r1, r2, y, tilingData);
}
