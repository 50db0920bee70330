// cross_entropy_loss for the op package: the row kernel of kernels/cross_entropy.cpp, SyncAll, then the reduction
// over rows (cross_entropy_phases.h).
#include "cross_entropy_phases.h"

extern "C" __global__ __aicore__ void cross_entropy_loss(GM_ADDR input, GM_ADDR target, GM_ADDR weight, GM_ADDR loss,
                                                         GM_ADDR log_prob, GM_ADDR zloss, GM_ADDR lse_for_zloss,
                                                         GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(CrossEntropyTilingData);
  GET_TILING_DATA_WITH_STRUCT(CrossEntropyTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);  // SyncAll: AIV_ONLY starts no cross-core scheduler
  GM_ADDR stats = GetUserWorkspace(workspace);
  {
    TPipe pipe;
    ProcessCrossEntropy<DTYPE_INPUT>(input, target, weight, log_prob, stats, tilingData, &pipe);
  }
  SyncAll();  // every block's per-row results are in GM
  CrossEntropyFinish<DTYPE_INPUT>(stats, loss, zloss, lse_for_zloss, tilingData);
}
