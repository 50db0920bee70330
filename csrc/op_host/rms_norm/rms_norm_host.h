// Host side of the RMSNorm ops (rms_norm, add_rms_norm and their grads): the problem functions
// (tiling/rms_norm_problem.h) the torch bindings call, on the inputs (and the forward ops' attr
// epsilon), then one tiling (tiling/rms_norm_tiling.h). x is [..., *gamma.shape]: rows = product
// of x's leading dims.
#pragma once
#include <algorithm>

#include "op_host_common.h"
#include "rms_norm_problem.h"

namespace ascendc_ops_host {

// The forward ops' epsilon (their prototype's default when absent); the backward ops have none.
template <typename Context>
double NormEpsilon(const Context* context, const tiling::OpSpec& op, bool backward) {
  using namespace ascendc_ops;
  if (backward) return 0.0;
  const tiling::Attr<float> epsilon = &op == &kAddRmsNorm     ? kAddRmsNormAttrs.epsilon
                                      : &op == &kGemmaRmsNorm ? kGemmaRmsNormAttrs.epsilon
                                      : &op == &kGatedRmsNorm ? kGatedRmsNormAttrs.epsilon
                                                              : kRmsNormAttrs.epsilon;
  return ReadAttr(context->GetAttrs(), epsilon);
}

// Forward inputs (x1[, x2], gamma), gated_rms_norm's (x, gamma, z); backward (dy, x, rstd, gamma[, dx_out or
// gated_rms_norm_grad's z]). `add`: the add_rms_norm ops.
template <typename Context>
tiling::NormArgs<int64_t> NormArgsOf(const Context* context, const tiling::OpSpec& op, bool add, bool backward) {
  using Arg = tiling::TensorArg<int64_t>;
  if (!backward && tiling::NormGated(op))
    return tiling::CheckGatedRmsNorm(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                     NormEpsilon(context, op, false));
  if (!backward) {
    const Arg x1 = InputArg(context, 0), x2 = add ? InputArg(context, 1) : Arg{},
              gamma = InputArg(context, add ? 2 : 1);
    return tiling::CheckRmsNorm(op, x1, add ? &x2 : nullptr, gamma, NormEpsilon(context, op, false));
  }
  const bool fifth = add || tiling::NormGated(op);  // dx_out, or z: input 4 of x's shape
  const Arg dy = InputArg(context, 0), x = InputArg(context, 1), rstd = InputArg(context, 2),
            gamma = InputArg(context, 3), dxOut = fifth ? InputArg(context, 4) : Arg{};
  return tiling::CheckRmsNormGrad(op, dy, x, rstd, gamma, fifth ? &dxOut : nullptr);
}

inline ge::graphStatus TileNormOp(gert::TilingContext* context, const tiling::OpSpec& op, bool add, bool backward) {
  return Checked([&] {
    const tiling::NormArgs<int64_t> a = NormArgsOf(context, op, add, backward);
    const tiling::NormTiling t =
        tiling::TileNorm(tiling::NormProblemOf(a, add, backward, NormEpsilon(context, op, backward),
                                               tiling::NormGammaOffset(op), tiling::NormGated(op)),
                         NpuPlatform(context));
    // No rows or empty rows: the torch path fills rstd / dgamma without a kernel; the op
    // package does not take such shapes.
    if (t.blockDim == 0) return ge::GRAPH_FAILED;
    if (!backward) return Publish(context, t.data, t.blockDim, t.tilingKey);
    // Backward is one launch: row phase, SyncAll, dgamma phase, so every block must be resident
    // at once (batch schedule mode); the fp32 dgamma partials [blockDim, hidden] are the workspace.
    context->SetScheduleMode(1);
    const uint32_t blocks = std::max(t.blockDim, t.reduceBlockDim);
    return Publish(context, t.data, blocks, t.tilingKey, size_t(t.blockDim) * size_t(a.hidden) * sizeof(float));
  });
}

// Forward outputs: y (x's shape), rstd (x's shape with gamma's dims set to 1) and for add_rms_norm
// x (x1's shape); backward: dx (x's shape), dgamma (gamma's shape), gated_rms_norm_grad's dz (x's shape).
inline ge::graphStatus InferNormShape(gert::InferShapeContext* context, const tiling::OpSpec& op, bool add,
                                      bool backward) {
  return Checked([&] {
    const tiling::NormArgs<int64_t> a = NormArgsOf(context, op, add, backward);
    if (backward) {
      if (SetOutputShape(context, 0, a.x) != ge::GRAPH_SUCCESS ||
          SetOutputShape(context, 1, a.gamma) != ge::GRAPH_SUCCESS)
        return ge::GRAPH_FAILED;
      return tiling::NormGated(op) ? SetOutputShape(context, 2, a.x) : ge::GRAPH_SUCCESS;
    }
    if (SetOutputShape(context, 0, a.x) != ge::GRAPH_SUCCESS || SetOutputShape(context, 1, a.rstd) != ge::GRAPH_SUCCESS)
      return ge::GRAPH_FAILED;
    return add ? SetOutputShape(context, 2, a.x) : ge::GRAPH_SUCCESS;
  });
}

// Forward: y (x's dtype), rstd (fp32), add_rms_norm's x (x1's dtype).
inline ge::graphStatus InferNormForwardDtype(gert::InferDataTypeContext* context, bool add) {
  if (SameDtype(context, 0, 0) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  if (context->SetOutputDataType(1, ge::DT_FLOAT) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return add ? SameDtype(context, 0, 2) : ge::GRAPH_SUCCESS;
}

// Backward inputs (dy, x, rstd, gamma[, dx_out or z]) -> outputs dx (x's dtype), dgamma (gamma's)[, `gated`: dz (x's)].
inline ge::graphStatus InferNormBackwardDtype(gert::InferDataTypeContext* context, bool gated = false) {
  if (SameDtype(context, 1, 0) != ge::GRAPH_SUCCESS || SameDtype(context, 3, 1) != ge::GRAPH_SUCCESS)
    return ge::GRAPH_FAILED;
  return gated ? SameDtype(context, 1, 2) : ge::GRAPH_SUCCESS;
}

}  // namespace ascendc_ops_host
