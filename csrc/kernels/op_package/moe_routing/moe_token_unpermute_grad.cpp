// moe_token_unpermute_grad for the op package: the kernel body of kernels/moe_routing_unpermute.cpp.
// permuted_tokens_grad arrives zero-filled (InitValue in the OpDef), as the kernel expects.
#include "kernels/moe_routing_unpermute.cpp"

extern "C" __global__ __aicore__ void moe_token_unpermute_grad(GM_ADDR permuted_tokens, GM_ADDR unpermuted_tokens_grad,
                                                               GM_ADDR sorted_indices, GM_ADDR probs,
                                                               GM_ADDR permuted_tokens_grad, GM_ADDR probs_grad,
                                                               GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(MoeRoutingTilingData);
  GET_TILING_DATA_WITH_STRUCT(MoeRoutingTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  UnpermuteGrad<DTYPE_PERMUTED_TOKENS, DTYPE_PROBS>(permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs,
                                                    permuted_tokens_grad, probs_grad, tilingData);
}
