// grouped_matmul_weight_grad for the op package: the cube kernel of kernels/grouped_matmul_weight_grad.cpp.
#include "kernels/grouped_matmul_weight_grad.cpp"

extern "C" __global__ __aicore__ void grouped_matmul_weight_grad(GM_ADDR x, GM_ADDR dy, GM_ADDR group_list,
                                                                 GM_ADDR dweight, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(GroupedMatmulTilingData);
  GET_TILING_DATA_WITH_STRUCT(GroupedMatmulTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  SetSysWorkspace(workspace);  // the Matmul API's system workspace (op_host: GetLibApiWorkSpaceSize)
  TPipe pipe;
  GroupedMatmulWeightGradKernel<DTYPE_X> op;
  op.Init(x, dy, group_list, dweight, tilingData, &pipe);
  op.Process();
}
