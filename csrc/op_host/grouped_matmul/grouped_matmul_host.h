// Host side of grouped_matmul (+ weight grad) on the cube cores: the problem function the torch
// binding calls (tiling/grouped_matmul_problem.h), then the tiling for the chip's cube resources.
// Values on the device (group_list) cannot be checked here.
#pragma once
#include "grouped_matmul_problem.h"
#include "op_host_common.h"

namespace ascendc_ops_host {

// The problem function (tiling/grouped_matmul_problem.h) the torch binding calls, on the inputs
// (x, weight or dy, group_list; forward: bias (3, optional)) and the attrs group_list_type and, forward
// only, transpose_weight.
template <typename Context>
tiling::GroupedMatmulArgs<int64_t> GroupedMatmulArgsOf(const Context* context, const tiling::OpSpec& op,
                                                       bool weightGrad, int64_t& listType, bool& transpose) {
  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  listType = ReadAttr(attrs, weightGrad ? ascendc_ops::kGroupedMatmulWeightGradAttrs.groupListType
                                        : ascendc_ops::kGroupedMatmulAttrs.groupListType);
  transpose = !weightGrad && ReadAttr(attrs, ascendc_ops::kGroupedMatmulAttrs.transposeWeight);
  const tiling::TensorArg<int64_t> bias =
      weightGrad ? tiling::TensorArg<int64_t>{{}, tiling::DType::kOther, false} : InputArg(context, 3, true);
  return tiling::CheckGroupedMatmul(op, InputArg(context, 0), InputArg(context, 1), InputArg(context, 2), listType,
                                    transpose, weightGrad, bias.defined ? &bias : nullptr);
}

inline ge::graphStatus TileGroupedMatmulOp(gert::TilingContext* context, const tiling::OpSpec& op, bool weightGrad) {
  return Checked([&] {
    int64_t listType = 1;
    bool transpose = false;
    const tiling::GroupedMatmulArgs<int64_t> a = GroupedMatmulArgsOf(context, op, weightGrad, listType, transpose);
    const tiling::GroupedMatmulTiling t = tiling::TileGroupedMatmul(
        tiling::GroupedMatmulProblemOf(a, InputArg(context, 0).dtype, listType, transpose, weightGrad),
        NpuCubePlatform(context));
    if (t.blockDim == 0) return ge::GRAPH_FAILED;  // empty output: no launch
    return Publish(context, t.data, t.blockDim, 0);  // workspace: the Matmul API's system workspace
  });
}

// y [M, N] (grouped_matmul) or dweight [E, K, N] (the weight grad).
inline ge::graphStatus InferGroupedMatmulShape(gert::InferShapeContext* context, const tiling::OpSpec& op,
                                               bool weightGrad) {
  return Checked([&] {
    int64_t listType = 1;
    bool transpose = false;
    return SetOutputShape(context, 0, GroupedMatmulArgsOf(context, op, weightGrad, listType, transpose).out);
  });
}

}  // namespace ascendc_ops_host
