// Host side of the MoE routing ops (moe_token_permute, moe_token_unpermute + grad): the problem
// functions the torch bindings call (tiling/moe_routing_problem.h), then the tiling
// (tiling/moe_routing_tiling.h). Values on the device (expert ids, sorted indices) cannot be checked here.
#pragma once
#include <optional>

#include "moe_routing_problem.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// moe_token_permute: tokens (0), indices (1); attrs num_out_tokens (nullable) and padded_mode.
template <typename Context>
tiling::PermuteArgs<int64_t> PermuteArgsOf(const Context* context, const tiling::OpSpec& op) {
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  const auto& a = ascendc_ops::kMoeTokenPermuteAttrs;
  return tiling::CheckMoeTokenPermute(op, InputArg(context, 0), InputArg(context, 1), ReadAttr(attrs, a.numOutTokens),
                                      ReadAttr(attrs, a.paddedMode));
}

// moe_token_unpermute: permuted_tokens (0), sorted_indices (1), probs (2, optional); the grad:
// permuted_tokens (0), unpermuted_tokens_grad (1), sorted_indices (2), probs (3, optional). Attrs
// padded_mode and restore_shape (absent or empty: none).
template <typename Context>
tiling::UnpermuteArgs<int64_t> UnpermuteArgsOf(const Context* context, const tiling::OpSpec& op, bool grad) {
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  const auto& fwd = ascendc_ops::kMoeTokenUnpermuteAttrs;
  const auto& bwd = ascendc_ops::kMoeTokenUnpermuteGradAttrs;
  const std::vector<int64_t> restoreShape =
      ReadAttr(attrs, grad ? bwd.restoreShape : fwd.restoreShape).value_or(std::vector<int64_t>{});
  const tiling::TensorArg<int64_t> dout = InputArg(context, 1), probs = InputArg(context, grad ? 3 : 2, true);
  return tiling::CheckMoeTokenUnpermute(op, InputArg(context, 0), grad ? &dout : nullptr,
                                        InputArg(context, grad ? 2 : 1), probs.defined ? &probs : nullptr,
                                        ReadAttr(attrs, grad ? bwd.paddedMode : fwd.paddedMode), restoreShape);
}

// One launch runs the three phases the torch path launches separately (chunk sort, merge rounds, row
// gather; csrc/kernels/op_package/moe_routing/moe_token_permute.cpp), meeting at SyncAll: every block resident
// (batch schedule mode), the (score, index) pairs of the merge rounds in the user workspace.
inline ge::graphStatus TilePermuteOp(gert::TilingContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::MoeRoutingTiling r = tiling::TileMoeRouting(
        tiling::MoeRoutingProblemOf(PermuteArgsOf(context, op), InputArg(context, 0).dtype), NpuPlatform(context));
    if (r.rowBlocks == 0) return ge::GRAPH_FAILED;  // no tokens: no launch
    context->SetScheduleMode(1);                    // SyncAll between the phases: all blocks at once
    return Publish(context, r.data, r.rowBlocks, 0, size_t(r.workspaceBytes));
  });
}

// permuted_tokens [num_out, H] (tokens' dtype), sorted_indices [T * K] (int32)
inline ge::graphStatus InferPermuteShape(gert::InferShapeContext* context, const tiling::OpSpec& op) {
  return Checked([&] {
    const tiling::PermuteArgs<int64_t> a = PermuteArgsOf(context, op);
    if (SetOutputShape(context, 0, a.permuted) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return SetOutputShape(context, 1, a.sortedIndices);
  });
}
inline ge::graphStatus InferPermuteDtype(gert::InferDataTypeContext* context) {
  if (SameDtype(context, 0, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return context->SetOutputDataType(1, ge::DT_INT32);
}

inline ge::graphStatus TileUnpermuteOp(gert::TilingContext* context, const tiling::OpSpec& op, bool grad) {
  return Checked([&] {
    const tiling::MoeRoutingTiling r = tiling::TileMoeRouting(
        tiling::MoeRoutingProblemOf(UnpermuteArgsOf(context, op, grad), InputArg(context, 0).dtype),
        NpuPlatform(context));
    if (r.rowBlocks == 0) return ge::GRAPH_FAILED;  // no tokens: no launch
    return Publish(context, r.data, r.rowBlocks, 0);
  });
}

inline ge::graphStatus InferUnpermuteShape(gert::InferShapeContext* context, const tiling::OpSpec& op, bool grad) {
  return Checked([&] {
    const tiling::UnpermuteArgs<int64_t> a = UnpermuteArgsOf(context, op, grad);
    if (SetOutputShape(context, 0, a.out) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return grad ? SetOutputShape(context, 1, a.probsGrad) : ge::GRAPH_SUCCESS;
  });
}

// the grad: permuted_tokens_grad as permuted_tokens, probs_grad as probs (without probs: permuted's dtype)
inline ge::graphStatus InferUnpermuteGradDtype(gert::InferDataTypeContext* context) {
  const ge::DataType probs = context->GetOptionalInputDataType(3);
  if (SameDtype(context, 0, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return context->SetOutputDataType(1, probs == ge::DT_UNDEFINED ? context->GetInputDataType(0) : probs);
}

}  // namespace ascendc_ops_host
