// rope_customer for the op package: the tutorial RoPE (interleaved pairs), the kernel body of kernels/rope.cpp.
#include "kernels/rope.cpp"

extern "C" __global__ __aicore__ void rope_customer(GM_ADDR x, GM_ADDR cos, GM_ADDR sin, GM_ADDR y, GM_ADDR workspace,
                                                    GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(RopeTilingData);
  GET_TILING_DATA_WITH_STRUCT(RopeTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  RopePass<DTYPE_X>(x, cos, sin, y, tilingData);
}
