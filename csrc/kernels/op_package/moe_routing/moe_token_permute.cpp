// moe_token_permute for the op package: sort, merge rounds and row gather in one launch meeting at
// SyncAll (moe_token_permute_one_launch.h).
#include "moe_token_permute_one_launch.h"

extern "C" __global__ __aicore__ void moe_token_permute(GM_ADDR tokens, GM_ADDR indices, GM_ADDR permuted_tokens,
                                                        GM_ADDR sorted_indices, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(MoeRoutingTilingData);
  GET_TILING_DATA_WITH_STRUCT(MoeRoutingTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);  // SyncAll: AIV_ONLY starts no cross-core scheduler
  PermuteOneLaunch<DTYPE_TOKENS, DTYPE_INDICES>(tokens, indices, permuted_tokens, sorted_indices, workspace,
                                                tilingData);
}
