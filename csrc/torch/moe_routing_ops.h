// MoE routing bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation, tiling.
#pragma once
#include <ATen/ATen.h>

#include <tuple>

#include "kernel_entries.h"
#include "moe_routing_problem.h"
#include "op_proto_table.h"

// The family's kernel entry lists (tiling/moe_routing_tiling_data.h), for ASCENDC_TWIN_KERNELS and
// ASCENDC_NPU_KERNELS; moe_merge_sorted is one entry, no list.
#define MOE_ROUTING_KERNELS(X)                                                   \
  X(MOE_SORT_CHUNKS_DTYPES, moe_sort_chunks, MOE_SORT_CHUNKS_PARAMS)             \
  X(MOE_TOKEN_PERMUTE_DTYPES, moe_token_permute, MOE_TOKEN_PERMUTE_PARAMS)       \
  X(MOE_TOKEN_UNPERMUTE_DTYPES, moe_token_unpermute, MOE_TOKEN_UNPERMUTE_PARAMS) \
  X(MOE_TOKEN_UNPERMUTE_GRAD_DTYPES, moe_token_unpermute_grad, MOE_TOKEN_UNPERMUTE_GRAD_PARAMS)

namespace ascendc_ops {

// moe_token_permute: tokens [T, H], indices [T, K] or [T*K]; permuted [n_out, H], sorted_indices int32 [T*K].
struct PermuteLaunch {
  at::Tensor tokens, indices, permuted, sortedIndices;
  tiling::MoeRoutingTiling tiling;

  // The chunk sort's and the row gather's GM tensors (EntryArgs: MOE_SORT_CHUNKS_PARAMS, MOE_TOKEN_PERMUTE_PARAMS),
  // with `pairs`, the (score, index) pairs in the workspace the sort writes and, merged, the gather reads.
  auto SortTensors(void* pairs) const { return std::make_tuple(std::cref(indices), pairs); }
  auto GatherTensors(void* pairs) const {
    return std::make_tuple(std::cref(tokens), pairs, std::cref(permuted), std::cref(sortedIndices));
  }
};
ASCENDC_OPS_API PermuteLaunch PreparePermute(const OpProto& op, const at::Tensor& tokens, const at::Tensor& indices,
                                             c10::optional<int64_t> numOutTokens, bool paddedMode,
                                             const tiling::PlatformInfo& platform);

// moe_token_unpermute (grad false) and moe_token_unpermute_grad (grad true).
struct UnpermuteLaunch {
  at::Tensor permuted, dout, sortedIndices, probs;  // dout: the grad op's unpermuted_tokens_grad
  at::Tensor out, probsGrad;                        // forward: out = unpermuted; grad: out = dpermuted
  tiling::MoeRoutingTiling tiling;

  // The kernels' GM tensors (EntryArgs: MOE_TOKEN_UNPERMUTE_PARAMS, MOE_TOKEN_UNPERMUTE_GRAD_PARAMS); absent probs:
  // null, and no probs_grad.
  auto Tensors() const { return std::tie(permuted, sortedIndices, probs, out); }
  auto GradTensors() const {
    return std::make_tuple(std::cref(permuted), std::cref(dout), std::cref(sortedIndices), std::cref(probs),
                           std::cref(out), probs.defined() ? probsGrad : at::Tensor());
  }
};
ASCENDC_OPS_API UnpermuteLaunch PrepareUnpermute(const OpProto& op, const at::Tensor& permuted, const at::Tensor& dout,
                                                 const at::Tensor& sortedIndices,
                                                 const c10::optional<at::Tensor>& probs, bool paddedMode,
                                                 at::OptionalIntArrayRef restoreShape, bool grad,
                                                 const tiling::PlatformInfo& platform);

}  // namespace ascendc_ops
