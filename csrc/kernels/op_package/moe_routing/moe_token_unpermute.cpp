// moe_token_unpermute for the op package: the kernel body of kernels/moe_routing_unpermute.cpp.
#include "kernels/moe_routing_unpermute.cpp"

extern "C" __global__ __aicore__ void moe_token_unpermute(GM_ADDR permuted_tokens, GM_ADDR sorted_indices,
                                                          GM_ADDR probs, GM_ADDR unpermuted_tokens, GM_ADDR workspace,
                                                          GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(MoeRoutingTilingData);
  GET_TILING_DATA_WITH_STRUCT(MoeRoutingTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Unpermute<DTYPE_PERMUTED_TOKENS, DTYPE_PROBS>(permuted_tokens, sorted_indices, probs, unpermuted_tokens, tilingData);
}
