// Host side of swiglu and swiglu_grad: the problem function (tiling/swiglu_problem.h) the torch
// binding calls, on the inputs and the attr `dim`, then the tiling.
#pragma once
#include "op_host_common.h"
#include "swiglu_problem.h"

namespace ascendc_ops_host {

// `backward`: inputs (dy, x); else (x).
template <typename Context>
tiling::SwigluArgs<int64_t> SwigluArgsOf(const Context* context, const tiling::OpSpec& op, bool backward) {
  const tiling::TensorArg<int64_t> dy = InputArg(context, 0), x = InputArg(context, backward ? 1 : 0);
  const int64_t dim =
      ReadAttr(context->GetAttrs(), backward ? ascendc_ops::kSwigluGradAttrs.dim : ascendc_ops::kSwigluAttrs.dim);
  return tiling::CheckSwiglu(op, backward ? &dy : nullptr, x, dim);
}

inline ge::graphStatus TileSwigluOp(gert::TilingContext* context, const tiling::OpSpec& op, bool backward) {
  return Checked([&] {
    const tiling::SwigluArgs<int64_t> a = SwigluArgsOf(context, op, backward);
    const tiling::DType dtype = InputArg(context, backward ? 1 : 0).dtype;
    const tiling::SwigluTiling t =
        tiling::TileSwiglu(tiling::SwigluProblemOf(a, dtype, backward), NpuPlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty x: no launch (aclnn skips empty outputs)
    return Publish(context, t.data, t.blockDim, t.tilingKey);
  });
}

inline ge::graphStatus InferSwigluShape(gert::InferShapeContext* context, const tiling::OpSpec& op, bool backward) {
  return Checked([&] { return SetOutputShape(context, 0, SwigluArgsOf(context, op, backward).out); });
}

}  // namespace ascendc_ops_host
