// grouped_matmul: y[rows of group e] = x[rows of group e] @ weight[e] (npu_grouped_matmul, split
// along M), on the cube cores. OpDef generated from op_proto/grouped_matmul.json; y is zero-filled
// by the framework first (InitValue), so rows past the last group read 0 as on the torch path.
#include "grouped_matmul_host.h"

namespace optiling {
static ge::graphStatus GroupedMatmulTiling(gert::TilingContext* context) {
  return ascendc_ops_host::TileGroupedMatmulOp(context, false);
}
}  // namespace optiling

namespace ge {
static graphStatus GroupedMatmulInferShape(gert::InferShapeContext* context) {
  // y: [M, N], N = weight.size(2), or weight.size(1) with transpose_weight
  const gert::Shape* x = context->GetInputShape(0);
  const gert::Shape* w = context->GetInputShape(1);
  gert::Shape* y = context->GetOutputShape(0);
  if (x == nullptr || w == nullptr || y == nullptr || x->GetDimNum() != 2 || w->GetDimNum() != 3) return GRAPH_FAILED;
  const bool transpose = ascendc_ops_host::BoolAttr(context->GetAttrs(), 1, false);
  *y = gert::Shape({x->GetDim(0), w->GetDim(transpose ? 1 : 2)});
  return GRAPH_SUCCESS;
}
static graphStatus GroupedMatmulInferDataType(gert::InferDataTypeContext* context) {
  return ascendc_ops_host::SameDtype(context, 0, 0);
}
}  // namespace ge

#include "grouped_matmul_def.h"
