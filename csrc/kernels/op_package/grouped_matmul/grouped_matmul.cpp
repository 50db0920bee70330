// grouped_matmul for the op package: the cube kernel of kernels/grouped_matmul.cpp.
#include "kernels/grouped_matmul.cpp"

extern "C" __global__ __aicore__ void grouped_matmul(GM_ADDR x, GM_ADDR weight, GM_ADDR group_list, GM_ADDR bias,
                                                     GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(GroupedMatmulTilingData);
  GET_TILING_DATA_WITH_STRUCT(GroupedMatmulTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
  SetSysWorkspace(workspace);  // the Matmul API's system workspace (op_host: GetLibApiWorkSpaceSize)
  TPipe pipe;
  ProcessGroupedMatmul<DTYPE_X>(x, weight, group_list, bias, y, tilingData, &pipe);
}
