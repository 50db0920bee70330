// Host side of cross_entropy_loss and cross_entropy_loss_grad: the problem function (tiling/cross_entropy_problem.h)
// the torch binding calls, on the inputs and the attrs, then the tiling. The op package's kernels finish on the
// device what the torch binding does with torch on [N] vectors (csrc/kernels/op_package/cross_entropy/): their
// per-row values, and the blocks' partial sums, are the user workspace.
#pragma once
#include <algorithm>

#include "cross_entropy_problem.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

template <typename Context>
tiling::CrossEntropyAttrs CrossEntropyAttrsOf(const Context* context, bool backward) {
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  tiling::CrossEntropyAttrs a;
  if (backward) {
    const auto& k = ascendc_ops::kCrossEntropyLossGradAttrs;
    a.reduction = ReadAttr(attrs, k.reduction);
    a.ignoreIndex = ReadAttr(attrs, k.ignoreIndex);
    a.labelSmoothing = ReadAttr(attrs, k.labelSmoothing);
    a.lseSquareScale = ReadAttr(attrs, k.lseSquareScaleForZloss);
  } else {
    const auto& k = ascendc_ops::kCrossEntropyLossAttrs;
    a.reduction = ReadAttr(attrs, k.reduction);
    a.ignoreIndex = ReadAttr(attrs, k.ignoreIndex);
    a.labelSmoothing = ReadAttr(attrs, k.labelSmoothing);
    a.lseSquareScale = ReadAttr(attrs, k.lseSquareScaleForZloss);
    a.returnZloss = ReadAttr(attrs, k.returnZloss);
  }
  return a;
}

// Forward inputs (input, target, weight?); backward (grad_loss, log_prob, target, weight?, grad_zloss?, lse?).
template <typename Context>
tiling::CrossEntropyArgs<int64_t> CrossEntropyArgsOf(const Context* context, const tiling::OpSpec& op, bool backward,
                                                     const tiling::CrossEntropyAttrs& a) {
  if (!backward)
    return tiling::CheckCrossEntropyLoss(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2, true), a);
  return tiling::CheckCrossEntropyLossGrad(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                           InputArg(context, 3, true), InputArg(context, 4, true),
                                           InputArg(context, 5, true), a);
}

// User workspace: forward, the per-row results [N, 4] then one 32-byte slot per block; backward, the per-row
// coefficients [3, N] then the slots (cross_entropy_package.h).
inline size_t CrossEntropyWorkspaceBytes(const tiling::CrossEntropyTiling& t) {
  const size_t perRow = t.data.backward ? 3 : kCrossEntropyStats;
  return (size_t(t.data.rows) * perRow * sizeof(float) + 31) / 32 * 32 + size_t(t.blockDim) * 32;
}

inline ge::graphStatus TileCrossEntropyOp(gert::TilingContext* context, const tiling::OpSpec& op, bool backward) {
  return Checked([&] {
    const tiling::CrossEntropyAttrs attrs = CrossEntropyAttrsOf(context, backward);
    const tiling::CrossEntropyArgs<int64_t> a = CrossEntropyArgsOf(context, op, backward, attrs);
    const bool hasWeight = InputArg(context, backward ? 3 : 2, true).defined;
    const tiling::CrossEntropyTiling t = tiling::TileCrossEntropy(
        tiling::CrossEntropyProblemOf(a, InputArg(context, backward ? 1 : 0).dtype, hasWeight, backward, attrs),
        NpuPlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // no rows: aclnn skips empty outputs
    // row phase, SyncAll, finish: every block resident at once (batch schedule mode)
    context->SetScheduleMode(1);
    return Publish(context, t.data, t.blockDim, t.tilingKey, CrossEntropyWorkspaceBytes(t));
  });
}

// Forward: loss, log_prob, zloss, lse_for_zloss; backward: x_grad.
inline ge::graphStatus InferCrossEntropyShape(gert::InferShapeContext* context, const tiling::OpSpec& op,
                                              bool backward) {
  return Checked([&] {
    const tiling::CrossEntropyArgs<int64_t> a =
        CrossEntropyArgsOf(context, op, backward, CrossEntropyAttrsOf(context, backward));
    if (backward) return SetOutputShape(context, 0, a.logProb);
    const std::vector<int64_t>* shapes[] = {&a.loss, &a.logProb, &a.zloss, &a.lse};
    for (size_t k = 0; k < 4; ++k)
      if (SetOutputShape(context, k, *shapes[k]) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return ge::GRAPH_SUCCESS;
  });
}

// Every output takes the logits' (forward: input 0) or log_prob's (backward: input 1) dtype.
inline ge::graphStatus InferCrossEntropyDtype(gert::InferDataTypeContext* context, bool backward) {
  for (size_t k = 0; k < (backward ? 1u : 4u); ++k)
    if (SameDtype(context, backward ? 1 : 0, k) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return ge::GRAPH_SUCCESS;
}

}  // namespace ascendc_ops_host
