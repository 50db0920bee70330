// MoE routing bindings shared by the CPU-twin and NPU launchers: argument checks, output allocation, tiling.
#pragma once
#include <ATen/ATen.h>

#include "moe_routing_problem.h"
#include "op_proto_table.h"

namespace ascendc_ops {

// moe_token_permute: tokens [T, H], indices [T, K] or [T*K]; permuted [n_out, H], sorted_indices int32 [T*K].
struct PermuteLaunch {
  at::Tensor tokens, indices, permuted, sortedIndices;
  tiling::MoeRoutingTiling tiling;
};
ASCENDC_OPS_API PermuteLaunch PreparePermute(const OpProto& op, const at::Tensor& tokens, const at::Tensor& indices,
                                             c10::optional<int64_t> numOutTokens, bool paddedMode,
                                             const tiling::PlatformInfo& platform);

// moe_token_unpermute (grad false) and moe_token_unpermute_grad (grad true).
struct UnpermuteLaunch {
  at::Tensor permuted, dout, sortedIndices, probs;  // dout: the grad op's unpermuted_tokens_grad
  at::Tensor out, probsGrad;                        // forward: out = unpermuted; grad: out = dpermuted
  tiling::MoeRoutingTiling tiling;
};
ASCENDC_OPS_API UnpermuteLaunch PrepareUnpermute(const OpProto& op, const at::Tensor& permuted, const at::Tensor& dout,
                                                 const at::Tensor& sortedIndices,
                                                 const c10::optional<at::Tensor>& probs, bool paddedMode,
                                                 at::OptionalIntArrayRef restoreShape, bool grad,
                                                 const tiling::PlatformInfo& platform);

}  // namespace ascendc_ops
