// Host side of linear_cross_entropy and linear_cross_entropy_grad: the problem function the torch bindings call
// (tiling/linear_cross_entropy_problem.h), then the tiling for the chip's cube cores.
#pragma once
#include <vector>

#include "linear_cross_entropy_problem.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// inputs hidden (0), weight (1), target (2); the backward's lse, grad_softmax, grad_target, grad_uniform (3-6);
// then the optional bias and class_weight (3-4 forward, 7-8 backward).
template <typename Context, typename Attrs>
tiling::LinearCrossEntropyArgs<int64_t> LinearCrossEntropyArgsOf(const Context* context, const tiling::OpSpec& op,
                                                                 const Attrs& attrs, bool backward) {
  std::vector<tiling::TensorArg<int64_t>> grads;
  if (backward)
    for (size_t k = 3; k < 7; ++k) grads.push_back(InputArg(context, k));
  const gert::RuntimeAttrs* a = context->GetAttrs();
  const size_t bias = backward ? 7 : 3;
  return tiling::CheckLinearCrossEntropy(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2),
                                         backward ? &grads : nullptr, InputArg(context, bias, true),
                                         InputArg(context, bias + 1, true),
                                         {ReadAttr(a, attrs.vocabStartIndex), double(ReadAttr(a, attrs.softcap))});
}

template <typename Attrs>
ge::graphStatus TileLinearCrossEntropyOp(gert::TilingContext* context, const tiling::OpSpec& op, const Attrs& attrs,
                                         bool backward) {
  return Checked([&] {
    const tiling::LinearCrossEntropyTiling t = tiling::TileLinearCrossEntropy(
        tiling::LinearCrossEntropyProblemOf(LinearCrossEntropyArgsOf(context, op, attrs, backward), backward),
        NpuCubePlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // an empty side: no launch
    return Publish(context, t.data, t.blockDim, 0, size_t(t.workspaceBytes));
  });
}

// Forward: four fp32 statistics [T]; backward: grad_hidden, grad_weight as hidden and weight, grad_bias [V].
template <typename Attrs>
ge::graphStatus InferLinearCrossEntropyShape(gert::InferShapeContext* context, const tiling::OpSpec& op,
                                             const Attrs& attrs, bool backward) {
  return Checked([&] {
    const tiling::LinearCrossEntropyArgs<int64_t> a = LinearCrossEntropyArgsOf(context, op, attrs, backward);
    if (backward) {
      if (SameShape(context, 0, 0) != ge::GRAPH_SUCCESS || SameShape(context, 1, 1) != ge::GRAPH_SUCCESS)
        return ge::GRAPH_FAILED;
      return SetOutputShape(context, 2, a.gradBias);
    }
    for (size_t k = 0; k < 4; ++k)
      if (SetOutputShape(context, k, a.stats) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
    return ge::GRAPH_SUCCESS;
  });
}

inline ge::graphStatus InferLinearCrossEntropyDtype(gert::InferDataTypeContext* context, bool backward) {
  if (backward) {
    if (SameDtype(context, 0, 0) != ge::GRAPH_SUCCESS || SameDtype(context, 1, 1) != ge::GRAPH_SUCCESS)
      return ge::GRAPH_FAILED;
    return SameDtype(context, 1, 2);
  }
  for (size_t k = 0; k < 4; ++k)
    if (context->SetOutputDataType(k, ge::DT_FLOAT) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  return ge::GRAPH_SUCCESS;
}

}  // namespace ascendc_ops_host
