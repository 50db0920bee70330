// swiglu_grad for the op package: dx = [dA, dB], the kernel body of kernels/swiglu.cpp.
#include "kernels/swiglu.cpp"

extern "C" __global__ __aicore__ void swiglu_grad(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace,
                                                  GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(SwigluTilingData);
  GET_TILING_DATA_WITH_STRUCT(SwigluTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  KernelSwigluGrad<DTYPE_X> op;
  op.Init(dy, x, dx, tilingData, &pipe);
  op.Process();
}
